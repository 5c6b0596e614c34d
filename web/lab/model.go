package lab

import (
	"time"

	"github.com/a-h/templ"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/lab/dbview"
	"github.com/oplab-dev/oplab/web/session"
)

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
	// Previewing: the page answers Preview YAML (no script), so the form
	// it was asked from stays open.
	Previewing bool
}

// Page is the view model of /lab.
type Page struct {
	Namespace string
	// ClassTimer is the class timer's end as text, for a page without
	// script (classroom.js counts it down); empty: no timer.
	ClassTimer string
	// Look names the learner whose lab the instructor looks at,
	// read-only, and LookStream is that lab's stream; empty: the
	// learner's own lab.
	Look, LookStream string
	Flash            *session.Flash
	Form             CreateForm
	Databases        []dbview.Database
	// Kept are the final snapshots whose Database is gone.
	Kept []dbview.Snapshot
	// ControllerRunning is whether the controller reconciles this
	// namespace now: it runs, and the learner has not paused it.
	ControllerRunning bool
	Pitfalls          []controller.PitfallInfo
	Engines           []string
	ChildKinds        []ChildKind
	Scenario          *ScenarioView
	Scenarios         []ScenarioView
	MaxDatabases      int
	// Paused is true while the controller holds the reconciles of this
	// namespace (the learner's Stop); the loop diagram says so.
	Paused bool
	// YourCode is true while the learner's own reconciler (Run my code on
	// /code) reconciles this namespace in place of oplab's.
	YourCode bool
	// Terminal: the page has kubectl in it (web/kubectl).
	Terminal bool
	// KubectlLine is the ready-to-paste kubectl command for this namespace,
	// shown with a copy button; "" hides it.
	KubectlLine string
	// Kubeconfig is where the learner downloads a kubeconfig for their
	// namespace only (then KubectlLine uses it); empty when the server
	// offers none.
	Kubeconfig string
	// Projector starts the page in projector mode (?projector=1): big type,
	// the loop, the selected card and the timeline on one screen.
	Projector bool
	// Rendered is when the page asked the state watcher for its cards
	// (RFC 3339, ms): the stream's catch-up replays older states, which the
	// script keeps off the cards, since the page already shows them or newer.
	Rendered string
}

// Card is what a Database card needs besides the Database: the choices its
// forms offer and the scenario to come back to after a form without
// JavaScript. The page, the stream's fragments and the replay all render
// cards with dbCard; a read-only card (replay) has no forms.
type Card struct {
	Scenario   string
	Pitfalls   []controller.PitfallInfo
	ChildKinds []ChildKind
	ReadOnly   bool
}

// CodeWords is what the controller pill says while the learner's own
// reconciler runs: whose code reconciles the namespace shown.
func (p Page) CodeWords() string {
	if p.Look != "" {
		return p.Look + "'s code reconciles"
	}
	return "Your code reconciles"
}

// Card returns the card context of the page's Databases.
func (p Page) Card() Card {
	c := Card{Pitfalls: p.Pitfalls, ChildKinds: p.ChildKinds}
	if p.Scenario != nil {
		c.Scenario = p.Scenario.Name
	}
	return c
}

// ScenarioView is a "try it live" scenario as the banner shows it.
type ScenarioView struct {
	Name  string
	Title string
	Intro string
	Setup string       // the setup button's label
	Watch []string     // what to watch once it is set up
	Next  []NextAction // the actions Watch asks for, in its panel
	Done  bool         // set up already: show Watch and Next
	// Through is the scenario's SeenThrough as JSON, for progress.js.
	Through string
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
	// Code is the learner's own code the file carries (version 2 on);
	// ImportPath, when set, is where the page's form loads it into the
	// editor.
	Code       *trace.Code
	ImportPath string
	// Travel is the id under which the file's history is kept for time
	// travel (replaytravel.go); empty when the file has none.
	Travel string
	// Mark is the step the page marks: where a tested schedule went
	// wrong (zero: none).
	Mark uint64
}

// FieldClass marks the input a flash error is about.
func (p Page) FieldClass(field string) string {
	if p.Flash != nil && p.Flash.Error && p.Flash.Field == field {
		return "invalid"
	}
	return ""
}

// clock is a moment as the server writes it: UTC, which the lab (base.js) rewrites in
// the learner's own zone from the <time> element's datetime.
func clock(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("15:04:05") + " UTC"
}

func datetime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
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
