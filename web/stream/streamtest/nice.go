package streamtest

import (
	"context"
	"os/exec"
	"strconv"
)

// ViewerNice is the default niceness of a load tool's viewer process. The
// viewers stand for browsers on other machines; here they share the cores
// with oplab and the cluster, and at the same priority their reading would
// be charged to oplab's throughput. At niceness 19 they take the CPU that
// is left over, and what they measure is an upper bound of the delay.
const ViewerNice = 19

// Command is exec.CommandContext run nice steps nicer than this process
// (through nice(1), which caps niceness at 19), or as it is when nice is 0.
func Command(ctx context.Context, nice int, name string, args ...string) *exec.Cmd {
	if nice == 0 {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "nice", append([]string{"-n", strconv.Itoa(nice), name}, args...)...)
}
