package app

import (
	"context"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/learn"
	"github.com/oplab-dev/oplab/web/stream"
)

type stubSwitch struct{}

func (stubSwitch) Start(context.Context) error { return nil }
func (stubSwitch) Stop() error                 { return nil }
func (stubSwitch) Running() bool               { return true }
func (stubSwitch) PauseNamespace(string)       {}
func (stubSwitch) ResumeNamespace(string)      {}
func (stubSwitch) NamespacePaused(string) bool { return false }
func (stubSwitch) HandedOver(string) bool      { return false }

// NewWeb refuses, before it reaches any API server, options that lack a
// part it cannot make itself.
func TestNewWebRefusesIncompleteOptions(t *testing.T) {
	rec := trace.NewRecorder(trace.RecorderOptions{})
	hub := stream.NewHub(rec, stream.HubOptions{})
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no config", Options{Recorder: rec}, "Config is required"},
		{"no recorder", Options{Config: &rest.Config{}}, "Recorder is required"},
		{"no hub", Options{Config: &rest.Config{}, Recorder: rec}, "Hub is required"},
		{"no controller", Options{Config: &rest.Config{}, Recorder: rec, Hub: hub}, "Controller is required"},
		{"no content", Options{Config: &rest.Config{}, Recorder: rec, Hub: hub, Controller: stubSwitch{}}, "Content is required"},
		{"negative cap", Options{Config: &rest.Config{}, Recorder: rec, Hub: hub, Controller: stubSwitch{}, Content: &learn.Content{}, MaxDatabasesPerNamespace: -1}, "negative"},
	}
	for _, tt := range tests {
		if _, err := NewWeb(t.Context(), tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: NewWeb err = %v, want %q", tt.name, err, tt.want)
		}
	}
}

// A bad namespace prefix is refused before anything is made.
func TestNewWebRefusesABadPrefix(t *testing.T) {
	rec := trace.NewRecorder(trace.RecorderOptions{})
	hub := stream.NewHub(rec, stream.HubOptions{})
	_, err := NewWeb(t.Context(), Options{Config: &rest.Config{Host: "https://127.0.0.1:1"}, Recorder: rec, Hub: hub, Controller: stubSwitch{}, Content: &learn.Content{}, NamespacePrefix: "Not A Prefix"})
	if err == nil || !strings.Contains(err.Error(), "Not A Prefix") {
		t.Errorf("NewWeb with a bad prefix: err = %v, want it refused naming the prefix", err)
	}
}
