package static

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/oplab-dev/oplab/web/internal/browsertest"
)

// browser is the Chromium these tests share, started by the first of them.
var browser = &browsertest.Browser{}

func TestMain(m *testing.M) { os.Exit(browser.Run(m)) }

// modulePage serves a page that loads base.js as the layout does, and the
// module at path (under /static/), and nothing else, so its functions are
// tested alone. Its own script puts the module's exports in the page's
// scope as oplab, for the tests to call.
func modulePage(t *testing.T, path string) string {
	t.Helper()
	return modulePageWith(t, path, `<main id="main"></main>`)
}

// modulePageWith is modulePage with body as the page's markup, for a
// module that draws into elements of its page.
func modulePageWith(t *testing.T, path, body string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(FS)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!DOCTYPE html><title>module</title>` + body + `<script type="module" src="/static/base.js"></script>` +
			`<script type="module">import * as oplab from "/static/` + path + `"; window.oplab = oplab;</script>`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// check evaluates each expression in a page holding base.js, in order,
// and fails on one that does not return "ok" (each returns what it saw
// otherwise).
func check(t *testing.T, steps []struct{ what, js string }) {
	t.Helper()
	checkModule(t, "base.js", steps)
}

// checkModule is check, with the exports of the module at path as oplab.
func checkModule(t *testing.T, path string, steps []struct{ what, js string }) {
	t.Helper()
	checkPage(t, modulePage(t, path), steps)
}

// checkPage is check on the page at url.
func checkPage(t *testing.T, url string, steps []struct{ what, js string }) {
	t.Helper()
	ctx := browser.Tab(t)
	browsertest.Do(t, ctx, chromedp.Navigate(url))
	browsertest.Eventually(t, ctx, `String(typeof window.oplab === "object")`, "true")
	for _, s := range steps {
		if got := browsertest.Eval[string](t, ctx, s.js); got != "ok" {
			t.Errorf("%s: got %s", s.what, got)
		}
	}
}

func TestStoreKeepsJSONAndText(t *testing.T) {
	check(t, []struct{ what, js string }{
		{"a JSON value round-trips through localStorage", `(() => {
			oplab.store.save("oplab.t", {a: [1, "x"]});
			const raw = localStorage.getItem("oplab.t"), back = oplab.store.load("oplab.t", null);
			return raw === '{"a":[1,"x"]}' && back.a[1] === "x" ? "ok" : raw + " " + JSON.stringify(back);
		})()`},
		{"nothing stored gives the fallback", `(() => {
			const v = oplab.store.load("oplab.none", "fallback");
			return v === "fallback" ? "ok" : JSON.stringify(v);
		})()`},
		{"what does not parse gives the fallback", `(() => {
			localStorage.setItem("oplab.bad", "{not json");
			const v = oplab.store.load("oplab.bad", 7);
			return v === 7 ? "ok" : JSON.stringify(v);
		})()`},
		{"text is kept as typed, not as JSON", `(() => {
			oplab.store.saveText("oplab.name", "Ada \"L\"");
			const raw = localStorage.getItem("oplab.name");
			return raw === 'Ada "L"' && oplab.store.text("oplab.name") === raw ? "ok" : raw;
		})()`},
		{"remove forgets", `(() => {
			oplab.store.remove("oplab.name");
			return localStorage.getItem("oplab.name") === null && oplab.store.text("oplab.name") === null ? "ok" : "still there";
		})()`},
		{"tabStore keeps to sessionStorage", `(() => {
			oplab.tabStore.saveText("oplab.follow.off", "5");
			return sessionStorage.getItem("oplab.follow.off") === "5" && localStorage.getItem("oplab.follow.off") === null ? "ok" : "stored elsewhere";
		})()`},
	})
}

// A browser may refuse to store (a full quota, private mode): the value
// then lasts for the page, and once storage takes writes again, storage is
// what is read, so another tab's later write is seen.
func TestStoreFallsBackToMemoryWhenStorageRefuses(t *testing.T) {
	check(t, []struct{ what, js string }{
		{"a refused save is still read back on the page", `(() => {
			window.realSetItem = Storage.prototype.setItem;
			Storage.prototype.setItem = function () { throw new DOMException("full", "QuotaExceededError"); };
			oplab.store.save("oplab.quiz", {best: 3});
			oplab.store.saveText("oplab.name", "Grace");
			const q = oplab.store.load("oplab.quiz", null);
			return localStorage.getItem("oplab.quiz") === null && q && q.best === 3 && oplab.store.text("oplab.name") === "Grace" ? "ok" : JSON.stringify(q);
		})()`},
		{"storage wins again once it takes writes", `(() => {
			Storage.prototype.setItem = window.realSetItem;
			oplab.store.save("oplab.quiz", {best: 4});
			localStorage.setItem("oplab.quiz", '{"best":5}'); // another tab
			const q = oplab.store.load("oplab.quiz", null);
			return q.best === 5 ? "ok" : JSON.stringify(q);
		})()`},
		{"storage switched off entirely", `(() => {
			Object.defineProperty(window, "localStorage", {get() { throw new DOMException("denied", "SecurityError"); }});
			let threw = false;
			try { window.localStorage; } catch { threw = true; }
			if (!threw) return "could not switch storage off";
			oplab.store.save("oplab.read", ["a"]);
			const v = oplab.store.load("oplab.read", []);
			oplab.store.remove("oplab.read");
			return v[0] === "a" && oplab.store.load("oplab.read", "gone") === "gone" ? "ok" : JSON.stringify(v);
		})()`},
	})
}

func TestH(t *testing.T) {
	check(t, []struct{ what, js string }{
		{"text goes in as text, empty parts are left out", `(() => {
			const el = oplab.h("p", {class: "note", hidden: true, title: null, "data-x": false}, "a<b>", null, ["c", oplab.h("i", {}, "d")], false, 0);
			const want = '<p class="note" hidden="">a&lt;b&gt;c<i>d</i>0</p>';
			return el.outerHTML === want ? "ok" : el.outerHTML;
		})()`},
	})
}
