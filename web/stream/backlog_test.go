package stream

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestBacklogJoinsOnlySmallFrames checks how a lagging viewer's queue is
// written: small frames are joined up to maxJoined, large ones go out as
// the shared frame itself (no private copy), and nothing is lost or reordered.
func TestBacklogJoinsOnlySmallFrames(t *testing.T) {
	small := func(i int) *frame { return &frame{data: []byte(fmt.Sprintf(`[{"seq":%d}]`, i))} }
	large := func(i int) *frame {
		pad := strings.Repeat("x", maxJoined)
		return &frame{data: []byte(fmt.Sprintf(`[{"seq":%d,"message":"%s"}]`, i, pad))}
	}
	tests := []struct {
		name   string
		frames []*frame
		writes int // frames written
	}{
		{"one small frame, nothing queued", []*frame{small(1)}, 1},
		{"small frames join into one", []*frame{small(1), small(2), small(3)}, 1},
		{"a large first frame is written alone", []*frame{large(1), small(2), small(3)}, 2},
		{"a large frame in the middle splits the join", []*frame{small(1), small(2), large(3), small(4)}, 3},
		{"large frames stay shared", []*frame{large(1), large(2)}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &client{send: make(chan *frame, len(tt.frames))}
			for _, f := range tt.frames[1:] {
				c.send <- f
			}
			var written []*frame
			write := func(f *frame) error { written = append(written, f); return nil }
			// The pump takes the first frame off the queue before writing.
			if err := c.writeQueuedTo(tt.frames[0], write); err != nil {
				t.Fatal(err)
			}
			for len(c.send) > 0 { // frames left queued are written on later turns
				if err := c.writeQueuedTo(<-c.send, write); err != nil {
					t.Fatal(err)
				}
			}
			if len(written) != tt.writes {
				t.Errorf("%d writes, want %d", len(written), tt.writes)
			}
			var seqs []int
			for _, w := range written {
				if len(w.data) > maxJoined && !isOneOf(w, tt.frames) {
					t.Errorf("a joined frame of %d bytes exceeds maxJoined %d", len(w.data), maxJoined)
				}
				var msgs []struct{ Seq int }
				if err := json.Unmarshal(w.data, &msgs); err != nil {
					t.Fatalf("written frame is not a JSON array: %v", err)
				}
				for _, m := range msgs {
					seqs = append(seqs, m.Seq)
				}
			}
			for i, s := range seqs {
				if s != i+1 {
					t.Fatalf("messages out of order or lost: %v", seqs)
				}
			}
			if len(seqs) != len(tt.frames) {
				t.Errorf("%d messages written, want %d", len(seqs), len(tt.frames))
			}
		})
	}
}

func isOneOf(f *frame, fs []*frame) bool {
	for _, g := range fs {
		if f == g {
			return true
		}
	}
	return false
}
