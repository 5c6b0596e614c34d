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
		{"a pitfall beside the learner's code, which it does not touch", `(() => {
			const mine = oplab.pitfallPill({start: {yourCode: true, pitfall: "status-thrash"}, steps: [{type: "fetch", pitfall: "status-thrash"}]});
			const oplabs = oplab.pitfallPill({start: {pitfall: "status-thrash"}, steps: []});
			const dropped = oplab.pitfallPill({start: {yourCode: true, pitfall: "drop-events"}, steps: []});
			return mine === "" && oplabs.textContent === "pitfall: status-thrash" && dropped.textContent === "pitfall: drop-events" ? "ok" : String(mine && mine.textContent) + " / " + oplabs.textContent;
		})()`},
		{"a write that changed a field", `(() => {
			const text = oplab.stepLine({type: "status", statusWrites: 5, observedGeneration: 2, fields: [{field: "observedGeneration", from: "1", to: "2"}]}).textContent;
			return text.includes("written, observedGeneration 2") && !text.includes("nothing in it changed") ? "ok" : text;
		})()`},
	})
}

// Finished no-op reconciles fold into one line that says what they did:
// oplab's found nothing to change and skipped the write (it compares); the
// learner's code's read the Database and wrote nothing (all the trace
// knows of code that may not compare).
func TestFoldSaysWhatItsReconcilesDid(t *testing.T) {
	page := modulePageWith(t, "lab/timeline.js", `<main id="main"><select id="filter"><option value="">all</option></select><ol id="rows"></ol></main>`)
	const noops = `((db, yours) => {
		for (let i = 0; i < 3; i++) {
			const id = db + "-" + i, time = new Date(Date.UTC(2026, 11, 4, 10, 0, i)).toISOString();
			oplab.onStart({type: "reconcile.start", reconcileID: id, database: db, trigger: "resync", time, yourCode: yours});
			oplab.onStep({type: "fetch", reconcileID: id, database: db, found: "found", time, yourCode: yours});
			oplab.onStep({type: "status", reconcileID: id, database: db, skipped: true, time, yourCode: yours});
			oplab.onStep({type: "result", reconcileID: id, database: db, result: "done", time, yourCode: yours});
		}
		return document.querySelector('#rows li.fold[data-db="' + db + '"] summary')?.textContent || "no fold";
	})`
	checkPage(t, page, []struct{ what, js string }{
		{"oplab's no-op reconciles", `((s) => s.includes("in sync ×3") && s.includes("found nothing to change and skipped the status write") ? "ok" : s)(` + noops + `("calm", false))`},
		{"the learner's code's", `((s) => s.includes("in sync ×3") && s.includes("each read the Database and wrote nothing") && !s.includes("skipped") ? "ok" : s)(` + noops + `("mine", true))`},
	})
}
