package kubectl

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/kubectl/pkg/cmd/annotate"
	"k8s.io/kubectl/pkg/cmd/apiresources"
	"k8s.io/kubectl/pkg/cmd/apply"
	"k8s.io/kubectl/pkg/cmd/auth"
	"k8s.io/kubectl/pkg/cmd/delete"
	"k8s.io/kubectl/pkg/cmd/describe"
	"k8s.io/kubectl/pkg/cmd/diff"
	"k8s.io/kubectl/pkg/cmd/events"
	"k8s.io/kubectl/pkg/cmd/explain"
	"k8s.io/kubectl/pkg/cmd/get"
	"k8s.io/kubectl/pkg/cmd/label"
	"k8s.io/kubectl/pkg/cmd/logs"
	"k8s.io/kubectl/pkg/cmd/patch"
	"k8s.io/kubectl/pkg/cmd/scale"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
	"k8s.io/kubectl/pkg/cmd/wait"
)

// ChildArg is the hidden subcommand that runs one kubectl command as the
// child of oplab: `oplab kubectl`. The parent (Runner) starts the running
// binary with it; cmd/oplab's main and the tests' TestMain hand over to
// RunChild when they see it.
const ChildArg = "kubectl"

// request is what the parent tells the child, on file descriptor 3: the
// learner's kubeconfig (their ServiceAccount's token, oplab's route to the
// API server) and the command's arguments, checked (Parse).
type request struct {
	Kubeconfig []byte   `json:"kubeconfig"`
	Args       []string `json:"args"`
	// Port is the API server's TCP port: the one the child may connect to.
	Port uint16 `json:"port"`
}

// requestFD is the descriptor the request comes on (the parent's
// ExtraFiles[0]): stdin is kubectl's own, the editor's text for -f -.
const requestFD = 3

// RunChild is the child's main: it limits and fences itself, reads its
// request and runs kubectl's own code on it, writing what kubectl writes
// to out, errors included, and returns kubectl's exit status. It reads no
// kubeconfig file, no environment and no flag of kubectl's connection
// settings: the only identity it has is the request's.
func RunChild(in io.Reader, out io.Writer) int {
	if err := limitSelf(); err != nil {
		fmt.Fprintf(out, "oplab: the kubectl child could not limit itself: %v\n", err)
		return 2
	}
	f := os.NewFile(requestFD, "request")
	var req request
	err := json.NewDecoder(io.LimitReader(f, maxRequest)).Decode(&req)
	f.Close()
	if err != nil {
		fmt.Fprintf(out, "oplab: the kubectl child read no request: %v\n", err)
		return 2
	}
	tmp, err := os.MkdirTemp("", "oplab-kubectl-")
	if err != nil {
		fmt.Fprintf(out, "oplab: the kubectl child has no room for kubectl diff: %v\n", err)
		return 2
	}
	defer os.RemoveAll(tmp)
	// kubectl diff writes the live and merged objects under TMPDIR and
	// runs KUBECTL_EXTERNAL_DIFF on them: this binary again, as the diff
	// (diff.go), since the fence lets it start nothing else.
	os.Clearenv()
	for k, v := range map[string]string{"TMPDIR": tmp, "HOME": tmp, "KUBECTL_EXTERNAL_DIFF": selfPath() + " " + DiffArg} {
		os.Setenv(k, v)
	}
	if err := fenceSelf(tmp, req.Port); err != nil {
		fmt.Fprintf(out, "oplab: the kubectl child could not fence itself: %v\n", err)
		return 2
	}
	raw, err := clientcmd.Load(req.Kubeconfig)
	if err != nil {
		fmt.Fprintf(out, "oplab: the kubectl child's kubeconfig: %v\n", err)
		return 2
	}
	code := 0
	// kubectl ends with os.Exit on an error, after printing it; as a
	// child of its own, that is only the child's exit status.
	cmdutil.BehaviorOnFatal(func(msg string, c int) {
		if msg != "" {
			if !strings.HasSuffix(msg, "\n") {
				msg += "\n"
			}
			fmt.Fprint(out, msg)
		}
		os.Exit(c)
	})
	root := newRoot(raw, genericiooptions.IOStreams{In: in, Out: out, ErrOut: out})
	root.SetArgs(req.Args)
	if err := root.Execute(); err != nil {
		code = 1
	}
	return code
}

// maxRequest bounds the request: a kubeconfig and a command line.
const maxRequest = 64 << 10

// newRoot is kubectl with only the commands the terminal offers (Verbs),
// each kubectl's own, and one global flag, --namespace: none of kubectl's
// connection flags (--kubeconfig, --token, --as, --server…) exists here.
func newRoot(raw *clientcmdapi.Config, streams genericiooptions.IOStreams) *cobra.Command {
	g := &getter{raw: raw}
	root := &cobra.Command{
		Use:           "kubectl",
		Short:         "kubectl, as your lab's ServiceAccount",
		SilenceUsage:  true,
		SilenceErrors: false,
		Run:           func(c *cobra.Command, _ []string) { _ = c.Help() },
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.CompletionOptions.DisableDefaultCmd = true
	root.PersistentFlags().StringVarP(&g.namespace, "namespace", "n", "", "If present, the namespace scope for this CLI request")
	f := cmdutil.NewFactory(g)
	authCmd := &cobra.Command{Use: "auth", Short: "Inspect authorization"}
	authCmd.AddCommand(auth.NewCmdCanI(f, streams), auth.NewCmdWhoAmI(f, streams))
	root.AddCommand(
		get.NewCmdGet("kubectl", f, streams),
		describe.NewCmdDescribe("kubectl", f, streams),
		apply.NewCmdApply("kubectl", f, streams),
		diff.NewCmdDiff(f, streams),
		patch.NewCmdPatch(f, streams),
		scale.NewCmdScale(f, streams),
		delete.NewCmdDelete(f, streams),
		annotate.NewCmdAnnotate("kubectl", f, streams),
		label.NewCmdLabel(f, streams),
		logs.NewCmdLogs(f, streams),
		events.NewCmdEvents(f, streams),
		wait.NewCmdWait(f, streams),
		explain.NewCmdExplain("kubectl", f, streams),
		apiresources.NewCmdAPIResources(f, streams),
		authCmd,
	)
	return root
}

// getter is kubectl's view of the cluster: the request's kubeconfig, held
// in memory, its context's namespace unless --namespace says otherwise;
// discovery cached in memory for the one command.
type getter struct {
	raw       *clientcmdapi.Config
	namespace string

	once   sync.Once
	disc   discovery.CachedDiscoveryInterface
	mapper meta.RESTMapper
	err    error
}

var _ genericclioptions.RESTClientGetter = &getter{}

func (g *getter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	overrides := &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: g.namespace}}
	return clientcmd.NewNonInteractiveClientConfig(*g.raw, g.raw.CurrentContext, overrides, nil)
}

func (g *getter) ToRESTConfig() (*rest.Config, error) {
	cfg, err := g.ToRawKubeConfigLoader().ClientConfig()
	if err != nil {
		return nil, err
	}
	// What the API server's audit log names: the learner's kubectl in the
	// lab's terminal.
	cfg.UserAgent = "kubectl (oplab lab terminal)"
	// As kubectl sets them (genericclioptions.ConfigFlags).
	cfg.QPS, cfg.Burst = 50, 300
	return cfg, nil
}

func (g *getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.load()
	return g.disc, g.err
}

func (g *getter) ToRESTMapper() (meta.RESTMapper, error) {
	g.load()
	return g.mapper, g.err
}

func (g *getter) load() {
	g.once.Do(func() {
		cfg, err := g.ToRESTConfig()
		if err != nil {
			g.err = err
			return
		}
		d, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			g.err = err
			return
		}
		g.disc = memory.NewMemCacheClient(d)
		g.mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(g.disc), g.disc, nil)
	})
}

// selfPath is the running binary, which kubectl diff starts as its diff.
func selfPath() string {
	exe, err := os.Executable()
	if err != nil {
		return "/proc/self/exe"
	}
	return exe
}
