package lab

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/oplab-dev/oplab/controller/trace"
)

// exportOfBytes is an export history whose one version weighs n bytes.
func exportOfBytes(n int) *trace.ExportHistory {
	return &trace.ExportHistory{Objects: []trace.HistoryObject{{Kind: "Database", Name: "shop",
		Versions: []trace.HistoryVersion{{Event: "create", Object: json.RawMessage(`{"x":"` + strings.Repeat("x", n-8) + `"}`)}}}}}
}

// Each uploader keeps their latest replay, whoever else opens files; the
// bytes kept are bounded, the oldest going first.
func TestReplayTravelsOnePerUploaderBoundedInBytes(t *testing.T) {
	replayTravels.Lock()
	saved := replayTravels.list
	replayTravels.list = nil
	replayTravels.Unlock()
	t.Cleanup(func() {
		replayTravels.Lock()
		replayTravels.list = saved
		replayTravels.Unlock()
	})

	small := exportOfBytes(1 << 10)
	first := keepReplayTravel("ns:lab-a", "lab-a", small, nil)
	// A class of 30 opening the same file does not push lab-a's out.
	for i := range 30 {
		keepReplayTravel("ns:lab-"+string(rune('b'+i)), "lab-x", small, nil)
	}
	if findReplayTravel(first) == nil {
		t.Fatal("30 other uploads of a small file pushed out lab-a's replay")
	}
	// lab-a's next replay takes the place of its first.
	second := keepReplayTravel("ns:lab-a", "lab-a", small, nil)
	if findReplayTravel(first) != nil || findReplayTravel(second) == nil {
		t.Error("lab-a's second replay did not replace its first")
	}
	// Large histories: the bytes bound pushes the oldest out.
	big := exportOfBytes(maxReplayHistoryBytes)
	var ids []string
	for i := range maxReplayTravelBytes/maxReplayHistoryBytes + 1 {
		ids = append(ids, keepReplayTravel("addr:10.0.0."+string(rune('0'+i)), "lab-y", big, nil))
	}
	if findReplayTravel(ids[0]) != nil || findReplayTravel(ids[len(ids)-1]) == nil {
		t.Error("over the bytes bound, the oldest big replay was kept or the newest dropped")
	}
	replayTravels.Lock()
	total := 0
	for _, r := range replayTravels.list {
		total += r.bytes
	}
	replayTravels.Unlock()
	if total > maxReplayTravelBytes {
		t.Errorf("%d bytes of replay history kept, over the %d bound", total, maxReplayTravelBytes)
	}
}
