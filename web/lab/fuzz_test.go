package lab

import (
	"bytes"
	"errors"
	"net/url"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/oplab-dev/oplab/controller"
	"github.com/oplab-dev/oplab/controller/trace"
)

// FuzzFormValidation feeds form bodies to the create and edit validators:
// they never panic, what they accept is what the API server may be sent,
// and what they refuse names a field.
//
//	go test -run '^$' -fuzz '^FuzzFormValidation$' -fuzztime 10s ./web/lab/
func FuzzFormValidation(f *testing.F) {
	// Real bodies: what lab/forms.js and the page's forms send, and what the
	// adversarial pass of issue 13 sent.
	for _, seed := range []string{
		"name=orders&engine=postgres&version=&replicas=1&pitfall=",
		"name=shop&engine=mysql&version=8.4&replicas=3&pitfall=drop-events",
		"replicas=2&version=17",
		"name=Orders&replicas=1",
		"name=" + strings.Repeat("a", 41) + "&replicas=1",
		"name=-x&replicas=1",
		"name=x&replicas=7",
		"name=x&replicas=+1",
		"name=x&replicas=99999999999999999999",
		"name=x&replicas=%20%201%20",
		"name=x&replicas=1&engine=oracle",
		"name=x&replicas=1&version=..%2F..",
		"name=x&replicas=1&pitfall=status-thrash&pitfall=no-finalizer",
		"name=%E2%80%AEx&replicas=1",
		"name=x%00&replicas=1",
		"",
	} {
		f.Add(seed)
	}
	known := controller.Pitfalls
	fields := []string{"name", "engine", "version", "replicas", "pitfall"}
	f.Fuzz(func(t *testing.T, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		in, err := parseCreate(form, known)
		if err != nil {
			checkFieldError(t, err, fields)
		} else {
			if len(in.Name) > MaxNameLength || len(validation.IsDNS1123Label(in.Name)) > 0 {
				t.Errorf("accepted name %q", in.Name)
			}
			if !slices.Contains(Engines, in.Engine) || in.Replicas < 1 || in.Replicas > 99 {
				t.Errorf("accepted engine %q, replicas %d", in.Engine, in.Replicas)
			}
			if in.Version != "" && (len(in.Version) > 32 || !versionPattern.MatchString(in.Version)) {
				t.Errorf("accepted version %q", in.Version)
			}
			if in.Pitfall != "" && !slices.ContainsFunc(known, func(p controller.PitfallInfo) bool { return p.Name == in.Pitfall }) {
				t.Errorf("accepted pitfall %q", in.Pitfall)
			}
		}
		ed, err := parseEdit(form)
		if err != nil {
			checkFieldError(t, err, fields)
		} else if (ed.Replicas != nil && (*ed.Replicas < 1 || *ed.Replicas > 99)) ||
			(ed.Version != nil && *ed.Version != "" && !versionPattern.MatchString(*ed.Version)) {
			t.Errorf("edit accepted %+v", ed)
		}
		if _, err := parseChildKind(form.Get("kind")); err != nil {
			checkFieldError(t, err, []string{"kind"})
		}
	})
}

func checkFieldError(t *testing.T, err error, fields []string) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) || !slices.Contains(fields, fe.Field) || fe.Message == "" {
		t.Errorf("refusal %v does not name one of the fields %v", err, fields)
	}
}

// FuzzReplay feeds uploads to the replay's checker: it never panics, what
// it accepts trace.ReadExport accepts too, with the same namespace and
// message count, and the page it makes carries the file as the same JSON
// with nothing that could end the script element.
//
//	go test -run '^$' -fuzz '^FuzzReplay$' -fuzztime 10s ./web/lab/
func FuzzReplay(f *testing.F) {
	// Real shapes: a step and a state snapshot as the recorder exports them
	// (a large seed slows the fuzzer to a crawl, so these are small).
	for _, seed := range []string{
		`{"version":1,"exportedAt":"2026-12-01T09:00:34Z","namespace":"lab-vmrjeeza","messages":[{"seq":7,"time":"2026-12-01T09:00:34.1Z","type":"reconcile.start","object":{"kind":"Database","namespace":"lab-vmrjeeza","name":"replayed"},"reconcileID":"a1","database":"replayed","trigger":"event"},{"seq":9,"time":"2026-12-01T09:00:34.2Z","type":"state","object":{"kind":"Database","namespace":"lab-vmrjeeza","name":"replayed"},"state":{"name":"replayed","generation":1,"observedGeneration":1,"conditions":[{"type":"Ready","status":"True","reason":"Available"}]}},{"seq":10,"time":"2026-12-01T09:00:34.3Z","type":"controller","object":{"kind":"Controller","name":"database"},"message":"started"}]}`,
		exportJSON(3, `</script><script>alert(1)</script>`),
		exportJSON(1, "") + "garbage",
		historyExport(scaledHistory),
		`{"version":1,"messages":[],"namespace":"lab-a"}`,
		`{"version":1,"exportedAt":"2026-11-30T09:41:07.123456Z","namespace":"lab-x7k2p9qd","messages":[{"seq":42,"time":"2026-11-30T09:41:07.123456Z","type":"action","object":{"kind":"Database","namespace":"lab-x7k2p9qd","name":"shop"},"reconcileID":"5c0e","database":"shop","action":"create","target":{"kind":"StatefulSet","namespace":"lab-x7k2p9qd","name":"shop"},"outcome":"Created","durationNs":2100000}]}`,
		`{"version":1,"Messages":[]}`,
		`{"version":1,"messages":[{"seq":1}]}`,
		`{"version": 9, "messages": []}`,
		`{}`,
		`[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		sum, err := checkExport(bytes.NewReader(file), bytes.NewReader(file))
		if err != nil {
			return
		}
		e, err := trace.ReadExport(bytes.NewReader(file), maxExportBytes)
		if err != nil {
			t.Fatalf("replay accepted what ReadExport refuses (%v):\n%q", err, file)
		}
		if e.Namespace != sum.namespace || len(e.Messages) != sum.messages {
			t.Errorf("replay read namespace %q, %d messages; ReadExport %q, %d", sum.namespace, sum.messages, e.Namespace, len(e.Messages))
		}
		var page bytes.Buffer
		if err := exportScript(bytes.NewReader(file)).Render(t.Context(), &page); err != nil {
			t.Fatal(err)
		}
		data := strings.TrimSuffix(strings.TrimPrefix(page.String(), `<script id="replay-data" type="application/json">`), "</script>")
		if strings.ContainsAny(data, "<>&") {
			t.Errorf("script data holds markup characters: %q", data)
		}
		again, err := trace.ReadExport(strings.NewReader(data), 0)
		if err != nil || again.Namespace != e.Namespace || len(again.Messages) != len(e.Messages) {
			t.Errorf("the page's data reads back as %q, %d messages, %v; want the file's", again.Namespace, len(again.Messages), err)
		}
	})
}
