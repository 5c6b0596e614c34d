package conformance

import (
	"fmt"
	"strings"
)

// SelectsDefault takes the default when nothing is ready, and a ready
// case otherwise.
func SelectsDefault() string {
	ch := make(chan int, 1)
	var out []string
	for i := 0; i < 2; i++ {
		select {
		case v := <-ch:
			out = append(out, fmt.Sprint("got ", v))
		default:
			out = append(out, "empty")
			ch <- 42
		}
	}
	return strings.Join(out, ",")
}

// SelectsSendAndClosed sends when there is room and receives from a
// closed channel.
func SelectsSendAndClosed() string {
	ch := make(chan string, 1)
	var out []string
	select {
	case ch <- "a":
		out = append(out, "sent")
	default:
		out = append(out, "full")
	}
	select {
	case ch <- "b":
		out = append(out, "sent")
	default:
		out = append(out, "full")
	}
	close(ch)
	v, ok := <-ch
	w, ok2 := <-ch
	out = append(out, fmt.Sprintf("%s %v %q %v", v, ok, w, ok2))
	return strings.Join(out, ",")
}

// SelectsNilChannel never picks a nil channel's case.
func SelectsNilChannel() string {
	var never chan int
	ready := make(chan int, 1)
	ready <- 1
	select {
	case <-never:
		return "nil channel"
	case v, ok := <-ready:
		return fmt.Sprint("ready ", v, ok)
	}
}

// SelectsBreakOutOfLoop leaves a loop from inside a select with a label.
func SelectsBreakOutOfLoop() string {
	ch := make(chan int, 3)
	ch <- 1
	ch <- 2
	close(ch)
	sum := 0
loop:
	for {
		select {
		case v, ok := <-ch:
			if !ok {
				break loop
			}
			sum += v
		}
	}
	return fmt.Sprint(sum)
}

// SelectsRangeChannel drains a closed channel with range.
func SelectsRangeChannel() string {
	ch := make(chan string, 3)
	for _, s := range []string{"x", "y", "z"} {
		ch <- s
	}
	close(ch)
	var b strings.Builder
	for s := range ch {
		b.WriteString(s)
	}
	return b.String()
}
