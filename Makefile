# oplab's commands. `make run` and `make test` do all their own set-up on a
# fresh machine with Go: the control plane is built from the Go module proxy
# on first use (about 11 minutes on 2 cores) and cached outside the repo.

GO       ?= go
ARGS     ?=
# Extra flags for `go test`, e.g. TESTFLAGS='-run TestLab -v'.
TESTFLAGS ?=
# The reference `make image` records in dist/oplab-image.tar.
IMAGE    ?= oplab:dev
# How many Databases the controller benchmark creates (1000 for the issue's target).
BENCH_DBS ?= 100

# How much `make fuzz` runs each fuzz target: a count of executions
# (`-fuzztime Nx`), not a duration. A duration races the Go fuzz coordinator's
# own deadline under load, which fails the run with "context deadline
# exceeded" and no failing input (golang/go#75804); a count ends when the work
# is done, however slow the machine. Minimizing a new input is capped by count
# too (the default, 60s, can spend a short run minimizing instead of fuzzing).
# FUZZTIME=10s still works for a timed run at the desk.
FUZZTIME ?= 20000x
FUZZMINIMIZETIME ?= 500x
# Every fuzz target, as package:Target.
# A target may name its own count after a second colon: FuzzCompile starts a
# sandbox child for each input that parses (about 125 executions a second).
FUZZ_TARGETS = ./web/lab:FuzzFormValidation ./web/lab:FuzzReplay ./web/stream:FuzzParseSince \
	./controller/trace:FuzzReadExport ./web/session:FuzzSessionCookie ./controller/sandbox:FuzzCompile:2000x

.PHONY: run test controlplane browser sandboxtypes generate verify vet bench build image fuzz help

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

# oplab builds a missing control plane itself, serving the course pages
# while it does, so run does not wait for the controlplane target.
run: sandboxtypes ## run oplab on http://127.0.0.1:8080 (the first time, it builds the control plane while serving the course)
	$(GO) run ./cmd/oplab $(ARGS)

# The slowest packages are named first, longest first, so that they start
# first: go test runs TEST_PACKAGES packages at a time in the order given,
# and a long one started last would run alone at the end. Three at a time
# on two cores: the packages used to mostly wait (on a control plane, a
# browser, an orphan's age), and four kept the cores busiest, but Test my
# code's batteries (controller/tester, lessons/judge, web/code, web/e2e)
# are CPU of their own: at four the load reached 50-60 and starved their
# sandbox children (docs/BENCHMARKS.md).
SLOWEST_FIRST = ./web/e2e/ ./cmd/oplab/ ./controller/config/ ./controller/tester/ ./controller/ ./cluster/ \
	./lessons/judge/ ./web/instructor/ ./web/session/ ./web/code/ ./web/learn/ ./controller/sandbox/ \
	./cmd/image/ ./web/stream/ ./web/lab/
TEST_PACKAGES ?= 3
# Tests that own their namespace (or their cluster) run TEST_PARALLEL at a
# time within a package, not GOMAXPROCS (2 here): a browser test spends
# most of its time waiting on the controller and the page.
TEST_PARALLEL ?= 4

# The test binaries are linked without DWARF (-ldflags=-w): no test runs
# under a debugger, and panics and stack traces read the symbol table, not
# DWARF. Linking them takes about 8% of the suite's CPU, and DWARF about a
# sixth of that (docs/BENCHMARKS.md).
TEST_LDFLAGS ?= -w

# The browser tests (web/e2e) run last, alone: beside the packages that
# run Test my code's batteries their clicks and waits met a machine at load
# 50 and more, and each full run failed a different two or three of them;
# alone they pass. The rest run first, TEST_PACKAGES at a time.
test: controlplane browser sandboxtypes ## run the whole test suite (real control plane, real Chromium)
	$(GO) test -count=1 -ldflags='$(TEST_LDFLAGS)' -p $(TEST_PACKAGES) -parallel $(TEST_PARALLEL) -timeout 45m $(TESTFLAGS) \
		$(filter-out ./web/e2e/,$(SLOWEST_FIRST)) $$($(GO) list ./... | grep -v '/web/e2e$$' | sed 's,^github.com/oplab-dev/oplab,.,')
	$(GO) test -count=1 -ldflags='$(TEST_LDFLAGS)' -parallel $(TEST_PARALLEL) -timeout 45m $(TESTFLAGS) ./web/e2e/

controlplane: ## build the pinned control-plane binaries into the cache (seconds when warm)
	$(GO) run ./cmd/provision

# The sandbox type-checks learner code against the export data of the
# packages it may import, embedded in the binary from a file that is built,
# never committed (controller/sandbox/exportdata). Every target that builds
# or tests oplab makes it first; about a second when the build cache is warm.
sandboxtypes: ## write the sandbox's type data (controller/sandbox/exportdata/packages.zip)
	$(GO) run ./cmd/sandboxtypes

browser: ## install Debian's Chromium and the pinned axe-core (npm ci) for the browser tests when missing
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "Installing chromium and chromium-driver (Debian packages) for the browser tests"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; \
	fi
	@# axe-core, pinned in web/a11y/package-lock.json, for the accessibility checks.
	@if [ ! -f web/a11y/node_modules/axe-core/axe.min.js ]; then npm ci --prefix web/a11y --no-audit --no-fund --silent; fi

generate: ## regenerate deepcopy, CRD, RBAC and templ files
	$(GO) tool controller-gen object paths=./controller/api/...
	$(GO) tool controller-gen crd rbac:roleName=oplab-controller paths=./controller/... \
		output:crd:artifacts:config=controller/config/crd output:rbac:artifacts:config=controller/config/rbac
	$(GO) tool templ generate

vet: sandboxtypes ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

verify: vet generate ## fail when generated files are stale, go.mod is untidy or code is unformatted
	$(GO) mod tidy -diff
	@git diff --exit-code -- . || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }
	@test -z "$$(git status --porcelain --untracked-files=all -- controller/config web)" || \
		{ git status --short -- controller/config web; echo "generation created untracked files"; exit 1; }

fuzz: sandboxtypes ## run each fuzz target for FUZZTIME executions (20000x); a failing input is saved under the package's testdata/fuzz
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; count=$(FUZZTIME); \
		case $$rest in *:*) count=$${rest#*:};; esac; echo "== $$name ($$pkg, $$count)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$count -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg || exit 1; \
	done

build: sandboxtypes ## build the oplab binary into bin/
	$(GO) build -o bin/oplab ./cmd/oplab

image: ## build oplab's container image into dist/oplab-image.tar (no Docker needed; docker load, kind load image-archive or crane push it)
	$(GO) run ./cmd/image -out dist/oplab-image.tar -tag $(IMAGE)

bench: controlplane sandboxtypes ## print the benchmarks' figures (cluster start, controller throughput, websocket fan-out, a class's cost per learner, oplab's RSS per worst learner, the worst learner code's cost)
	$(GO) test -run '^$$' -bench BenchmarkTimeToReady -benchtime 1x ./cluster/
	$(GO) test -run '^$$' -bench . -benchtime 1x ./controller/ -args -dbs=$(BENCH_DBS)
	$(GO) run ./cmd/loadtest -viewers 500,2000 -rate 100 -duration 10s
	$(GO) test -run '^$$' -bench ControllerWithViewers -benchtime 1x ./cmd/loadtest/viewers/ -dbs 100 -viewers 2000 -rounds 5
	$(GO) test -run '^$$' -bench Class -benchtime 1x ./cmd/loadtest/class/ -learners 30 -followers 30 -rounds 5
	$(GO) test -run '^$$' -bench Class -benchtime 1x ./cmd/loadtest/class/ -worst -learners 10 -rounds 2
	CI=true $(GO) test -run '^$$' -bench LearnerTimeline4096 -benchtime 1x ./web/e2e/
	CI=true $(GO) test -run '^$$' -bench LabLoadWithAFullRing -benchtime 5x ./web/e2e/
	$(GO) test -run '^$$' -bench WorstLearnerMemory -benchtime 1x ./controller/trace/
	$(GO) test -run '^$$' -bench 'Compile|ReconcileRoundTrip|RunToFirstReconcile|TypeCheck' -benchtime 20x ./controller/sandbox/
	$(GO) test -run '^$$' -bench Neighbours -benchtime 1x ./controller/sandbox/
	$(GO) test -run '^$$' -bench WorstCode -benchtime 1x ./controller/sandbox/ -args -worst-learners 6 -worst-for 30s
	$(GO) test -run '^$$' -bench Battery -benchtime 5x ./controller/tester/
	$(GO) test -run '^$$' -bench NeighboursWhileTesting -benchtime 1x ./controller/tester/ -args -testers 20
