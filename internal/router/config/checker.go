package config

import "go.yaml.in/yaml/v3"

// A router product takes part in the config checks by implementing Checker on its registry
// type (internal/router/<product>), and any of the optional interfaces below for the places
// its configuration shows up. The Linter is given the checkers in the registry's order and asks
// each in turn; it never names a product. What the checks share (the document model with
// positions, findings and their rewrites, engines, command lines, containers, the checks
// across files) is this package's.
//
// Hooks that recognise something return a Format ("" for not the product's); the first format
// a document or file is recognised as is the one lint reports.

// Checker is a router product's configuration checks.
type Checker interface {
	// ConfigRules returns the product's rules, in the order the README lists them. Each code
	// starts with the product's id and a slash (llm-d/topic-filter).
	ConfigRules() []Rule
	// ConfigFormats returns the formats the product's checks recognise documents or files as.
	ConfigFormats() []Format
}

// DocumentChecker recognises whole YAML documents as the product's own, by their kind or
// their top-level keys (an EndpointPickerConfig, a LiteLLM config.yaml, production-stack
// values), and checks them.
type DocumentChecker interface {
	// ConfigKinds returns the Kubernetes-style kinds the product owns: a document of one of
	// them goes to this checker alone, whatever another product would read in its keys. nil
	// for a product told by its keys.
	ConfigKinds() []string
	// CheckDocument checks root and returns its format and what loads it, or "" when the
	// document is not the product's. A document of no owned kind is offered to each checker
	// in the registry's order until one recognises it.
	CheckDocument(d *Doc, root *yaml.Node) (Format, Loader)
}

// NestedChecker checks what the product keeps inside documents of any kind: a config held in
// a string (an EndpointPickerConfig in a ConfigMap), a block of settings in a larger file (a
// Ray Serve request_router_config). It is asked about every document, after the whole-document
// checks and the workloads (Doc.Recognised says whether a whole-document check took it).
type NestedChecker interface {
	CheckNested(d *Doc, root *yaml.Node) (Format, Loader)
}

// ContainerChecker checks a container of a workload, or a compose service, for what the
// product reads there beside command lines (an image, the environment).
type ContainerChecker interface {
	CheckContainer(d *Doc, c *Container)
}

// CommandChecker recognises the product's program in a command line (a container's command
// and args, a compose service's, a line of a script) and checks it.
type CommandChecker interface {
	// CheckCommand checks one command line run by replicas pods (1 in a script) and returns
	// the format of a script that runs it, or "" when the line does not start the product.
	CheckCommand(f *File, argv []Token, replicas int) Format
}

// TextChecker checks a file that is not YAML for the product's configuration (a Python Ray
// Serve application).
type TextChecker interface {
	CheckText(f *File) Format
}

// FileChecker reads the whole file before any of its documents is checked, for what one
// document shows of another (the llm-d EPP's flags in a Deployment beside its config).
type FileChecker interface {
	BeginFile(f *File, docs []*yaml.Node)
}

// RunChecker runs the product's checks across the files of one run, over the facts each file
// recorded (File.AddFact, File.AddRouter, the engines).
type RunChecker interface {
	CheckRun(r *Run)
}

// Container is a container of a workload (or a compose service, read as one) as the hooks see
// it.
type Container struct {
	// Node is the container's mapping (a compose service's, rebuilt with command, args,
	// image, environment and name); At is where the finding about its environment goes.
	Node        *yaml.Node
	At          Pos
	Name, Image string
	// Env is its environment (env or environment): each variable's value and where it is set.
	Env map[string]Token
	// Replicas is how many pods run it (a Deployment's replicas, a compose service's
	// deploy.replicas; 1 when not said).
	Replicas int
	// Compose says it is a compose service.
	Compose bool
}

// Loader is what reads a document, for what a key written twice does there.
type Loader struct {
	// Text says what happens, with one %s for the line kept ("Helm keeps the last pair (%s),
	// silently").
	Text string
	// Own says the product decodes the document itself even where it is a Kubernetes object
	// (the llm-d EPP reads its EndpointPickerConfig), so what kubectl does is not the story.
	Own bool
}

// EngineLauncher is a product whose own program starts a vLLM engine (Dynamo's python -m
// dynamo.vllm): the engine checks read its command lines as vLLM's, with Engine.Launcher set to
// the word that started it.
type EngineLauncher interface {
	// EngineLaunchers returns the words (a Python module) that start the product's engine.
	EngineLaunchers() []string
}
