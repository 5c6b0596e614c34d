package stream

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func entries(seqs ...uint64) []*entry {
	out := make([]*entry, len(seqs))
	for i, s := range seqs {
		out[i] = &entry{seq: s, raw: []byte{byte('0' + s%10)}}
	}
	return out
}

func entrySeqs(es []*entry) []uint64 {
	out := []uint64{}
	for _, e := range es {
		out = append(out, e.seq)
	}
	return out
}

func TestRing(t *testing.T) {
	for _, tc := range []struct {
		name      string
		size      int
		push      []uint64
		after     uint64
		want      []uint64
		wantFloor uint64
	}{
		{"empty", 3, nil, 0, []uint64{}, 0},
		{"not full", 3, []uint64{1, 2}, 0, []uint64{1, 2}, 0},
		{"full", 3, []uint64{1, 2, 3}, 0, []uint64{1, 2, 3}, 0},
		{"wrapped", 3, []uint64{1, 2, 3, 4, 5}, 0, []uint64{3, 4, 5}, 2},
		{"after inside", 3, []uint64{1, 2, 3, 4, 5}, 3, []uint64{4, 5}, 2},
		{"after last", 3, []uint64{1, 2, 3, 4, 5}, 5, []uint64{}, 2},
		{"sparse seqs", 4, []uint64{2, 7, 9, 15, 20}, 8, []uint64{9, 15, 20}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(tc.size)
			for _, e := range entries(tc.push...) {
				r.push(e)
			}
			if diff := cmp.Diff(tc.want, entrySeqs(r.after(tc.after))); diff != "" {
				t.Errorf("after(%d) (-want +got):\n%s", tc.after, diff)
			}
			if r.floor != tc.wantFloor {
				t.Errorf("floor = %d, want %d", r.floor, tc.wantFloor)
			}
		})
	}
}

func TestMergeBySeq(t *testing.T) {
	for _, tc := range []struct {
		a, b, want []uint64
	}{
		{nil, nil, []uint64{}},
		{[]uint64{1, 3}, nil, []uint64{1, 3}},
		{nil, []uint64{2}, []uint64{2}},
		{[]uint64{1, 4, 5}, []uint64{2, 3, 6}, []uint64{1, 2, 3, 4, 5, 6}},
	} {
		if diff := cmp.Diff(tc.want, entrySeqs(mergeBySeq(entries(tc.a...), entries(tc.b...)))); diff != "" {
			t.Errorf("merge(%v, %v) (-want +got):\n%s", tc.a, tc.b, diff)
		}
	}
}

func TestBatchEncoding(t *testing.T) {
	if got := string(encodeBatch(entries(1, 2, 3))); got != "[1,2,3]" {
		t.Errorf("encodeBatch = %s", got)
	}
	if got := string(joinBatches([][]byte{[]byte("[1]"), []byte("[2,3]"), []byte("[4]")})); got != "[1,2,3,4]" {
		t.Errorf("joinBatches = %s", got)
	}
}

func TestWindowGrowsWithViewers(t *testing.T) {
	for _, tc := range []struct {
		viewers int
		want    time.Duration
	}{
		{0, 0},
		{1, 20 * time.Nanosecond},
		{100, 200 * time.Microsecond},
		{500, 5 * time.Millisecond},
		{1000, 20 * time.Millisecond},
		{2000, 80 * time.Millisecond},
		{10000, 80 * time.Millisecond}, // capped at BatchInterval
	} {
		r := NewRecorder(Options{})
		for range tc.viewers {
			r.clients[&client{}] = struct{}{}
		}
		if got := r.window(); got != tc.want {
			t.Errorf("window with %d viewers = %v, want %v", tc.viewers, got, tc.want)
		}
	}
}
