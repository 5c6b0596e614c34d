package static

import "testing"

// A status write the API server kept as it was (the status sent equalled
// the stored one) wakes no one: the row says so, where it said "written"
// like any other, beside a lesson that says a write triggers the next
// reconcile. A write that changed something still reads "written". And a
// reconcile of the learner's code that wrote no status says just that,
// where it said "unchanged", oplab's comparison, which that code may not
// make; a child it read is a read, not oplab's diff.
func TestStepLineSaysWhatTheCodeDid(t *testing.T) {
	checkModule(t, "lab/rowtext.js", []struct{ what, js string }{
		{"an unchanged write", `(() => {
			const text = oplab.stepLine({type: "status", unchanged: true, resourceVersion: "812", statusWrites: 4, observedGeneration: 1}).textContent;
			return text.includes("nothing in it changed") && text.includes("kept resourceVersion 812") && text.includes("no watch event follows") && text.includes("status write #4") ? "ok" : text;
		})()`},
		{"the learner's code that wrote no status", `(() => {
			const text = oplab.stepLine({type: "status", skipped: true, yourCode: true, observedGeneration: 1}).textContent;
			return text.includes("no status write: your code wrote no status") && !text.includes("unchanged") ? "ok" : text;
		})()`},
		{"oplab's comparison that skipped the write", `(() => {
			const text = oplab.stepLine({type: "status", skipped: true, observedGeneration: 1}).textContent;
			return text.includes("unchanged: write skipped") ? "ok" : text;
		})()`},
		{"a child the learner's code read", `(() => {
			const found = oplab.stepLine({type: "read", yourCode: true, found: "found", resourceVersion: "77", target: {kind: "StatefulSet", name: "shop"}}).textContent;
			const gone = oplab.stepLine({type: "read", yourCode: true, found: "not-found", target: {kind: "Service", name: "shop"}}).textContent;
			return found.includes("StatefulSet shop read by your code → found · resourceVersion 77") && gone.includes("Service shop read by your code → not found") ? "ok" : found + " / " + gone;
		})()`},
		{"a write that changed a field", `(() => {
			const text = oplab.stepLine({type: "status", statusWrites: 5, observedGeneration: 2, fields: [{field: "observedGeneration", from: "1", to: "2"}]}).textContent;
			return text.includes("written, observedGeneration 2") && !text.includes("nothing in it changed") ? "ok" : text;
		})()`},
	})
}
