package conformance

import (
	"fmt"
	"strings"
)

// LabelsBreakOuter leaves two loops at once.
func LabelsBreakOuter() string {
	grid := [][]int{{1, 2}, {3, -1}, {5, 6}}
	found := ""
outer:
	for i, row := range grid {
		for j, v := range row {
			if v < 0 {
				found = fmt.Sprint(i, j)
				break outer
			}
		}
	}
	return found
}

// LabelsContinueOuter skips to the outer loop's next turn.
func LabelsContinueOuter() string {
	var out []string
rows:
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			if j > i {
				continue rows
			}
			out = append(out, fmt.Sprint(i, j))
		}
	}
	return strings.Join(out, ",")
}

// LabelsBreakFromSwitchInLoop leaves a loop from inside a switch.
func LabelsBreakFromSwitchInLoop() string {
	n := 0
loop:
	for i := 0; ; i++ {
		switch {
		case i == 5:
			break loop
		case i%2 == 0:
			continue
		}
		n += i
	}
	return fmt.Sprint(n)
}

// LabelsGoto jumps forward and back.
func LabelsGoto() string {
	i := 0
	s := ""
again:
	s += fmt.Sprint(i)
	i++
	if i < 3 {
		goto again
	}
	goto done
done:
	return s
}
