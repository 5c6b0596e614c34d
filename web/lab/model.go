package lab

import (
	"time"

	"github.com/a-h/templ"

	"github.com/oplab-dev/oplab/web/lab/state"
)

// Pitfall is a pitfall as the lab offers it.
type Pitfall struct {
	Name        string
	Title       string
	Description string
}

// Flash is the outcome of the last form, shown once.
type Flash struct {
	Error   bool
	Message string
	Field   string
}

// CreateForm is the "create a Database" form as typed, with its preview.
type CreateForm struct {
	Name     string
	Engine   string
	Version  string
	Replicas string
	Pitfall  string
	// Preview is the YAML the form would create; PreviewError says why
	// there is none.
	Preview      string
	PreviewError string
}

// Page is the view model of /lab.
type Page struct {
	Namespace string
	Flash     *Flash
	Form      CreateForm
	Databases []state.Database
	// Kept are the final snapshots whose Database is gone.
	Kept              []state.Snapshot
	ControllerRunning bool
	Pitfalls          []Pitfall
	Engines           []string
	ChildKinds        []ChildKind
	Scenario          *ScenarioView
	Scenarios         []ScenarioView
	MaxDatabases      int
	// Kubeconfig is where the learner downloads a kubeconfig for their
	// namespace only, and KubectlCommand the line to paste then; empty
	// when the server offers none.
	Kubeconfig     string
	KubectlCommand string
}

// ScenarioView is a "try it live" scenario as the banner shows it.
type ScenarioView struct {
	Name  string
	Title string
	Intro string
	Setup string   // the setup button's label
	Watch []string // what to watch once it is set up
	Done  bool     // set up already: show Watch
}

// ReplayPage is the view model of the replay page: an upload form, or an
// export being played back.
type ReplayPage struct {
	Error string
	// File names the uploaded file; Export renders its JSON, already
	// checked, as the player's data (a script element with id replay-data).
	File      string
	Namespace string
	Messages  int
	Export    templ.Component
}

// FieldClass marks the input a flash error is about.
func (p Page) FieldClass(field string) string {
	if p.Flash != nil && p.Flash.Error && p.Flash.Field == field {
		return "invalid"
	}
	return ""
}

func clock(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format("15:04:05")
}

func readyClass(status string) string {
	switch status {
	case "True":
		return "ok"
	case "False":
		return "bad"
	}
	return "unknown"
}

// conditionClass colours a condition's status by what it means: Ready=True
// is good, Degraded=True is bad, anything else is neutral.
func conditionClass(condType, status string) string {
	switch {
	case condType == "Ready":
		return readyClass(status)
	case condType == "Degraded" && status == "True":
		return "bad"
	case condType == "Degraded" && status == "False":
		return "ok"
	}
	return ""
}
