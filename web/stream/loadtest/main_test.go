package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
