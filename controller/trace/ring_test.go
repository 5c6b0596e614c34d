package trace

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/oplab-dev/oplab/controller"
)

func entries(seqs ...uint64) []*Entry {
	out := make([]*Entry, len(seqs))
	for i, s := range seqs {
		out[i] = &Entry{seq: s, raw: []byte{byte('0' + s%10)}}
	}
	return out
}

func entrySeqs(es []*Entry) []uint64 {
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
			r := newRing(tc.size, 0)
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

// Issue 19 (c): the ring was bounded by count only, so a learner whose
// messages were large (a Database card listing 600 Pods) held tens of MiB.
// It keeps at most maxBytes, evicting the oldest, and the newest always.
func TestRingBoundedInBytes(t *testing.T) {
	r := newRing(100, 1000)
	sized := func(seq uint64, n int) *Entry { return &Entry{seq: seq, raw: make([]byte, n)} }
	for i := range 10 {
		r.push(sized(uint64(i+1), 300))
		if r.bytes > 1000 {
			t.Fatalf("after %d pushes the ring holds %d bytes, over its 1000", i+1, r.bytes)
		}
	}
	if diff := cmp.Diff([]uint64{8, 9, 10}, entrySeqs(r.after(0))); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if r.floor != 7 || r.bytes != 900 {
		t.Errorf("floor %d, bytes %d; want 7 and 900", r.floor, r.bytes)
	}
	// One message larger than the bound is kept alone.
	r.push(sized(11, 5000))
	if diff := cmp.Diff([]uint64{11}, entrySeqs(r.after(0))); diff != "" || r.bytes != 5000 || r.floor != 10 {
		t.Errorf("after a huge message: kept %v, bytes %d, floor %d", entrySeqs(r.after(0)), r.bytes, r.floor)
	}
	r.push(sized(12, 10))
	if diff := cmp.Diff([]uint64{12}, entrySeqs(r.after(0))); diff != "" || r.bytes != 10 {
		t.Errorf("after a small one: kept %v, bytes %d", entrySeqs(r.after(0)), r.bytes)
	}
	// The count bound still holds with room in bytes.
	small := newRing(3, 1<<20)
	for i := range 5 {
		small.push(sized(uint64(i+1), 1))
	}
	if diff := cmp.Diff([]uint64{3, 4, 5}, entrySeqs(small.after(0))); diff != "" {
		t.Errorf("count bound (-want +got):\n%s", diff)
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
		if diff := cmp.Diff(tc.want, entrySeqs(MergeBySeq(entries(tc.a...), entries(tc.b...)))); diff != "" {
			t.Errorf("merge(%v, %v) (-want +got):\n%s", tc.a, tc.b, diff)
		}
	}
}

func TestBatchEncoding(t *testing.T) {
	if got := string(encodeBatch(entries(1, 2, 3))); got != "[1,2,3]" {
		t.Errorf("encodeBatch = %s", got)
	}
}

func TestFreshViewersShareTheCatchupWhileMessagesArrive(t *testing.T) {
	r := NewRecorder(RecorderOptions{RingSize: 2000})
	// Each batch framed gets a pointer of its own, so sharing shows.
	r.Attach(Feed{Frame: func(b []byte) any { return &b }})
	emit := func(n int) {
		for range n {
			r.record(nil, input{step: step("a", "db", controller.StepEvent)})
		}
	}
	// seqs reads back what a viewer would receive.
	seqsOf := func(fs []Batch) []uint64 {
		var out []uint64
		for _, f := range fs {
			var ms []Message
			if err := json.Unmarshal(f.JSON, &ms); err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				out = append(out, m.Seq)
			}
		}
		return out
	}
	upTo := func(n uint64) []uint64 {
		var out []uint64
		for i := uint64(1); i <= n; i++ {
			out = append(out, i)
		}
		return out
	}
	emit(1000)
	first := r.catchup(fresh("a"))
	if diff := cmp.Diff(upTo(1000), seqsOf(first)); diff != "" {
		t.Fatalf("first viewer's catch-up (-want +got):\n%s", diff)
	}
	emit(10)
	r.record(nil, input{step: step("b", "db", controller.StepEvent)}) // another namespace's
	second := r.catchup(fresh("a"))
	if diff := cmp.Diff(upTo(1010), seqsOf(second)); diff != "" {
		t.Fatalf("second viewer's catch-up (-want +got):\n%s", diff)
	}
	for i := range first {
		if second[i].Framed != first[i].Framed {
			t.Fatalf("batch %d was built again; want the cached batches shared", i)
		}
	}
	// Another viewer before the next message shares the batch of what
	// came since, too.
	again := r.catchup(fresh("a"))
	if again[len(again)-1].Framed != second[len(second)-1].Framed {
		t.Error("the batch of what came since the cache was built again for the next viewer")
	}
	// Enough since the cache to fill a batch: built again, still whole.
	emit(catchupChunk)
	third := r.catchup(fresh("a"))
	want := slices.DeleteFunc(upTo(1011+catchupChunk), func(s uint64) bool { return s == 1011 }) // 1011 is b's
	if diff := cmp.Diff(want, seqsOf(third)); diff != "" {
		t.Fatalf("third viewer's catch-up (-want +got):\n%s", diff)
	}
	if third[0].Framed == first[0].Framed {
		t.Error("the cache was not built again after a batch's worth of messages")
	}

	// A global message since the cache is in the delta, in seq order; and
	// once the ring has evicted past the cache, the cache is built again.
	r.record(nil, input{step: controller.Step{Type: controller.StepController, Object: controller.ObjectRef{Kind: "Controller", Name: "database"}}})
	g := r.seq
	emit(3)
	fourth := r.catchup(fresh("a"))
	if got := seqsOf(fourth); !slices.Contains(got, g) || !slices.IsSorted(got) || got[len(got)-1] != r.seq {
		t.Errorf("catch-up after a global message: seq %d missing, or out of order, or not up to %d", g, r.seq)
	}
	emit(2000) // more than the ring holds
	fifth := seqsOf(r.catchup(fresh("a")))
	if len(fifth) > 2000+1 || fifth[len(fifth)-1] != r.seq || !slices.IsSorted(fifth) {
		t.Errorf("after the ring evicted past the cache: %d messages up to %d, want the ring's 2,000 (and the global one) up to %d", len(fifth), fifth[len(fifth)-1], r.seq)
	}
}

func TestCatchupIsBuiltAgainOnceTheRingEvictedPastIt(t *testing.T) {
	r := NewRecorder(RecorderOptions{RingSize: 100})
	emit := func(n int) {
		for range n {
			r.record(nil, input{step: step("a", "db", controller.StepEvent)})
		}
	}
	emit(50)
	r.catchup(fresh("a")) // caches seqs 1..50
	emit(120)             // the ring now holds 71..170: fewer than a batch's worth since, but 51..70 are gone
	var got []uint64
	for _, f := range r.catchup(fresh("a")) {
		var ms []Message
		if err := json.Unmarshal(f.JSON, &ms); err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			got = append(got, m.Seq)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i] != got[i-1]+1 {
			t.Fatalf("catch-up jumps from seq %d to %d: a cache older than the ring was joined to it", got[i-1], got[i])
		}
	}
	if len(got) == 0 || got[len(got)-1] != 170 {
		t.Errorf("catch-up ends at %v, want 170", got[len(got)-1:])
	}
}
