package refused

import "fmt"

// ClearSlice zeroes a slice with clear.
func ClearSlice() string {
	s := []int{1, 2}
	clear(s) // sandbox: clear of a slice
	return fmt.Sprint(s)
}
