package sandbox

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The parent and the child speak JSON lines over the child's stdin and
// stdout, one message each way at a time: the parent sends compile or
// reconcile; while reconciling, the child sends a call for each facade
// method the learner's code invokes and waits for its reply; it ends with
// compiled or result. Nothing else crosses: the child has no other file.

// Message ops.
const (
	opCompile   = "compile"   // parent → child: Source
	opCompiled  = "compiled"  // child → parent: Error, if the source did not compile
	opReconcile = "reconcile" // parent → child: Namespace, Name
	opCall      = "call"      // child → parent: Call
	opReply     = "reply"     // parent → child: Reply
	opResult    = "result"    // child → parent: Requeue, RequeueAfter, Error
	// The tests' fence probe (fence_probe_test.go): parent → child, and
	// its report in Output.
	opProbe  = "probe"
	opProbed = "probed"
)

type message struct {
	Op string `json:"op"`

	Source string `json:"source,omitempty"`

	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`

	Call  *call  `json:"call,omitempty"`
	Reply *reply `json:"reply,omitempty"`

	Requeue      bool          `json:"requeue,omitempty"`
	RequeueAfter time.Duration `json:"requeueAfter,omitempty"`
	Error        *SourceError  `json:"error,omitempty"`
	// Output is what the code printed with print/println, cut short.
	Output string `json:"output,omitempty"`
	// Fence names the kernel fence's layers the child raised (compiled).
	Fence []string `json:"fence,omitempty"`
}

// call is one facade method the learner's code invoked.
type call struct {
	// Verb is get, list, create, update, patch, delete, status.update or
	// status.patch.
	Verb      string          `json:"verb"`
	Kind      string          `json:"kind"`
	Namespace string          `json:"namespace,omitempty"`
	Name      string          `json:"name,omitempty"`
	Object    json.RawMessage `json:"object,omitempty"`
	// PatchType and Patch carry a patch as client.Patch computed it.
	PatchType string          `json:"patchType,omitempty"`
	Patch     json.RawMessage `json:"patch,omitempty"`
	// Labels is a list's label selector.
	Labels string `json:"labels,omitempty"`
}

// reply is the parent's answer to a call: the object as the API server
// returned it, or the error as a Status (so apierrors.IsNotFound and the
// other predicates work on it in the child), or a refusal by the parent.
type reply struct {
	Object json.RawMessage `json:"object,omitempty"`
	Status *metav1.Status  `json:"status,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// SourceError is an error in the learner's code: a compile error, a panic
// or an error the reconcile returned, with where in the source it was when
// known (Line and Col are 1-based; zero when unknown).
type SourceError struct {
	Kind    string `json:"kind"` // compile, panic, error, deadline, crash
	Message string `json:"message"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	// Errors lists every error of a compile that found more than one, in
	// the order of the file, the first being the one above; the page can
	// mark each line. Empty for one error, a panic or a reconcile's error.
	Errors []SourceError `json:"errors,omitempty"`
}

func (e *SourceError) Error() string {
	if e.Line > 0 {
		return fmtLine(e.Line, e.Col) + e.Message
	}
	return e.Message
}
