package report

import "github.com/charmbracelet/lipgloss"

// Every colour and text style kvcheck uses, by role. Nothing else in the program picks a colour.
var (
	styleHeading = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("12"))
	styleError   = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("9"))
	styleWarning = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11"))
	styleInfo    = lipgloss.NewStyle().Foreground(lipgloss.Color("14"))
	styleGood    = lipgloss.NewStyle().Foreground(lipgloss.Color("10"))
	styleMuted   = lipgloss.NewStyle().Faint(true)
	styleVerdict = lipgloss.NewStyle().Bold(true).Underline(true)
	// Tables: the header row and the box lines.
	styleTableHeader = lipgloss.NewStyle().Bold(true)
	styleTableRule   = lipgloss.NewStyle().Faint(true)
)
