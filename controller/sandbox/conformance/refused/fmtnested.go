package refused

import "fmt"

type level int

func (l level) String() string { return [...]string{"low", "high"}[l] }

// FmtStringersInASlice formats a slice of a type of the code's own with a
// String method: Go calls it for each element.
func FmtStringersInASlice() string {
	levels := []level{0, 1}
	return fmt.Sprint(levels) // sandbox: inside this
}
