// Package refused is the part of the conformance corpus the sandbox
// refuses: Go that its interpreter runs wrongly (or hangs on) and that no
// rewrite says rightly. Each file is one construct; its line marked
// `// sandbox: …` is where the refusal must point, and the words after
// the marker must be in its message. The functions run compiled too, to
// show what Go does with them.
package refused

// Cases are the corpus's functions by name, for the compiled side.
var Cases = map[string]func() string{
	"AssertLookalike":      AssertLookalike,
	"AssertOwnStringer":    AssertOwnStringer,
	"ClearSlice":           ClearSlice,
	"DeferFunctionValue":   DeferFunctionValue,
	"DeferLaterRecoverer":  DeferLaterRecoverer,
	"DeferLiteralInLoop":   DeferLiteralInLoop,
	"ErrorTypeAs":          ErrorTypeAs,
	"ErrorTypeNilPointer":  ErrorTypeNilPointer,
	"FmtFieldNames":        FmtFieldNames,
	"FmtStringersInASlice": FmtStringersInASlice,
	"GenericInference":     GenericInference,
	"PromotedInterface":    PromotedInterface,
	"RangeOverFunc":        RangeOverFunc,
}
