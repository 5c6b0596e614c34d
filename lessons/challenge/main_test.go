package challenge_test

import (
	"os"
	"testing"

	"github.com/oplab-dev/oplab/lessons/challenge/challengetest"
)

// TestMain shares one cluster, controller and recorder across the
// package's challenge self-tests (challengetest.Run) and stops them at the end.
func TestMain(m *testing.M) { os.Exit(challengetest.Main(m)) }
