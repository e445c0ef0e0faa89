module github.com/kvcheck/kvcheck/tools

go 1.26
