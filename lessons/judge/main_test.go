package judge_test

import (
	"os"
	"testing"

	"github.com/oplab-dev/oplab/lessons/judge/judgetest"
)

// TestMain shares one cluster, controller and recorder across the
// package's challenge self-tests (judgetest.Run) and stops them at the end.
func TestMain(m *testing.M) { os.Exit(judgetest.Main(m)) }
