package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
	"github.com/oplab-dev/oplab/web/stream"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    []int
		wantErr string
	}{
		{nil, []int{500, 2000}, ""},
		{[]string{"-viewers", "10, 20"}, []int{10, 20}, ""},
		{[]string{"-viewers", "10,x"}, nil, `-viewers "10,x"`},
		{[]string{"-viewers", "0"}, nil, `-viewers "0"`},
		{[]string{"-rate", "0"}, nil, "-rate 0"},
		{[]string{"-duration", "1h"}, nil, "-duration 1h0m0s"},
	} {
		cfg, err := parseFlags(tc.args)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseFlags(%q) error %v, want one mentioning %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseFlags(%q): %v", tc.args, err)
			continue
		}
		if diff := cmp.Diff(tc.want, cfg.viewers); diff != "" {
			t.Errorf("parseFlags(%q) viewers (-want +got):\n%s", tc.args, diff)
		}
	}
}

func TestEachStepFindsEventTimes(t *testing.T) {
	frame := `[{"seq":1,"time":"2026-11-30T09:00:00.5Z","type":"event","object":{"kind":"Database","name":"db"}},` +
		`{"seq":2,"time":"2026-11-30T09:00:01Z","type":"dropped","object":{"kind":"Recorder","name":"trace"}},` +
		`{"seq":3,"time":"2026-11-30T09:00:02.25Z","type":"event","object":{"kind":"Database","name":"db"},"message":"x"}]`
	var got []time.Time
	eachStep([]byte(frame), func(t time.Time) { got = append(got, t) })
	want := []time.Time{
		time.Date(2026, 11, 30, 9, 0, 0, 5e8, time.UTC),
		time.Date(2026, 11, 30, 9, 0, 2, 25e7, time.UTC),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("times (-want +got):\n%s", diff)
	}
}

func TestViewersMeasureASampleAndCountEveryFrame(t *testing.T) {
	rec := trace.NewRecorder(trace.RecorderOptions{})
	hub := stream.NewHub(rec, stream.HubOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done, hubDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	go func() { defer close(hubDone); hub.Run(ctx) }()
	defer func() { cancel(); <-done; <-hubDone }()
	srv := httptest.NewServer(hub.Handler(func(r *http.Request) (string, error) { return "ns", nil }))
	defer srv.Close()

	vs, err := dialViewers(10, 2, "ws"+strings.TrimPrefix(srv.URL, "http"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, v := range vs {
			_ = v.conn.Close()
		}
	}()
	for hub.Stats().Clients < 10 {
		time.Sleep(5 * time.Millisecond)
	}
	for _, v := range vs {
		v.reset()
	}
	queued0 := hub.Stats().Frames
	const sent = 5
	for range sent {
		rec.Emit(controller.Step{Type: controller.StepEvent, Object: controller.ObjectRef{Kind: "Database", Namespace: "ns", Name: "db"}})
		time.Sleep(2 * time.Millisecond)
	}
	// Once the measuring viewers have every step, every frame is queued:
	// a flush queues a frame to all viewers of the namespace at once.
	for end := time.Now().Add(10 * time.Second); totals(vs).Received < 2*sent; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("measuring viewers received %d of %d steps", totals(vs).Received, 2*sent)
		}
	}
	// Run may still be handing that last frame to the other viewers: wait
	// until what they read is what it queued.
	for end := time.Now().Add(10 * time.Second); totals(vs).Frames != int64(hub.Stats().Frames-queued0); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("viewers read %d frames, the recorder queued %d", totals(vs).Frames, hub.Stats().Frames-queued0)
		}
	}
	queued := int64(hub.Stats().Frames - queued0)
	rep := collect(vs, sent, queued)
	if rep.Measured != 2 {
		t.Errorf("%d measuring viewers, want 2", rep.Measured)
	}
	if rep.Received != 2*sent {
		t.Errorf("measuring viewers received %d steps, want %d", rep.Received, 2*sent)
	}
	if rep.Frames != queued {
		t.Errorf("viewers read %d frames, the recorder queued %d", rep.Frames, queued)
	}
	if rep.Wire <= 0 || rep.Decoded <= 0 {
		t.Errorf("wire %d bytes, decoded %d bytes: want both counted", rep.Wire, rep.Decoded)
	}
	if rep.P99 <= 0 {
		t.Errorf("p99 %v: want delays measured", rep.P99)
	}
}
