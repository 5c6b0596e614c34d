// Package kubectl is kubectl in the lab page: a learner types a kubectl
// command, and oplab runs kubectl's own code (k8s.io/kubectl, the release
// of the pinned Kubernetes) on it, as the learner's ServiceAccount, with the
// token and RBAC of the kubeconfig the lab hands out, in a child process of
// oplab's own binary, fenced and bounded, and streams back what kubectl
// prints. Parse decides what runs: the verbs a learner of operators needs,
// never one that opens a listener, reads a file of the server's, starts a
// shell or acts as another identity, and each refusal says why.
package kubectl

import (
	"fmt"
	"slices"
	"strings"
)

// Command is a command line Parse let through.
type Command struct {
	// Args are kubectl's arguments, its verb first.
	Args []string
	// Stdin: the command reads the editor's text (-f -).
	Stdin bool
	// Long: the command goes on until stopped (a watch, logs -f, wait):
	// the terminal's time limit ends it, and says so.
	Long bool
}

// Refusal is a command line the terminal does not run, and why.
type Refusal struct{ Why string }

func (r *Refusal) Error() string { return r.Why }

func refuse(format string, args ...any) error { return &Refusal{Why: fmt.Sprintf(format, args...)} }

// maxLine bounds a command line.
const maxLine = 2000

// Verbs are the kubectl commands the terminal offers, in the order the help
// lists them.
var Verbs = []string{"get", "describe", "apply", "diff", "patch", "scale", "delete", "annotate", "label",
	"logs", "events", "wait", "explain", "api-resources", "auth can-i", "auth whoami"}

// refused are kubectl's other commands, each with why it is not here.
var refused = map[string]string{
	"exec":          "kubectl exec starts a shell or a program in a container: this terminal starts none",
	"attach":        "kubectl attach joins a container's terminal: this terminal opens none",
	"cp":            "kubectl cp copies files between a computer and a container: this terminal reads and writes no file",
	"port-forward":  "kubectl port-forward listens on a port of the server: this terminal opens no listener",
	"proxy":         "kubectl proxy listens on a port of the server: this terminal opens no listener",
	"run":           "kubectl run starts a Pod of any image: your namespace's Pods are the Databases' (write a Database with apply -f -)",
	"debug":         "kubectl debug starts a container and attaches to it: this terminal starts none",
	"edit":          "kubectl edit opens a text editor on the server: use the editor below with apply -f -, or patch",
	"create":        "kubectl create is not offered: write the object in the editor below and use apply -f -",
	"replace":       "kubectl replace is not offered: use apply -f - with the editor below, or patch",
	"expose":        "kubectl expose makes Services: the controller makes the Databases' own",
	"autoscale":     "kubectl autoscale is not offered: a Database's replicas are its spec's",
	"rollout":       "kubectl rollout changes a StatefulSet's Pod template, which your Role does not allow: change the Database instead",
	"set":           "kubectl set changes a Pod template, which your Role does not allow: change the Database instead",
	"config":        "kubectl config reads and writes kubeconfig files: this terminal has one identity, your lab's ServiceAccount, and no file",
	"plugin":        "kubectl plugins are programs on a computer: none runs here",
	"kustomize":     "kubectl kustomize reads a folder of files: this terminal reads no file (use apply -f - with the editor below)",
	"cordon":        "nodes are the cluster's, not your namespace's",
	"uncordon":      "nodes are the cluster's, not your namespace's",
	"drain":         "nodes are the cluster's, not your namespace's",
	"taint":         "nodes are the cluster's, not your namespace's",
	"top":           "kubectl top needs a metrics server, which this cluster does not run",
	"certificate":   "certificate requests are the cluster's, not your namespace's",
	"cluster-info":  "kubectl cluster-info is the cluster admin's: your identity reaches your namespace only",
	"completion":    "shell completion is for a terminal on your computer",
	"alpha":         "kubectl's alpha commands are not offered",
	"version":       "not offered: the cluster runs Kubernetes v1.37.2, and this kubectl is its own release",
	"options":       "kubectl's global options are this terminal's: --namespace (-n) is the one you may set",
	"api-versions":  "not offered: kubectl api-resources lists what your namespace has",
	"auth":          "of kubectl auth, this terminal offers can-i and whoami",
	"help":          "", // answered by the page
	"apply-set":     "not offered",
	"events-export": "not offered",
}

// identityFlags are kubectl's connection and identity flags. None exists
// in the terminal's kubectl: it acts as the learner's ServiceAccount only.
var identityFlags = []string{"kubeconfig", "context", "cluster", "user", "token", "as", "as-group", "as-uid",
	"server", "s", "certificate-authority", "client-certificate", "client-key", "insecure-skip-tls-verify",
	"tls-server-name", "username", "password", "disable-compression", "kuberc", "match-server-version"}

// hostFlags are kubectl's flags about the computer it runs on: its files,
// logs and profiles.
var hostFlags = []string{"cache-dir", "log-file", "log-dir", "log-file-max-size", "logtostderr", "alsologtostderr",
	"one-output", "skip-headers", "skip-log-headers", "stderrthreshold", "v", "vmodule", "profile", "profile-output",
	"log-flush-frequency", "warnings-as-errors", "request-timeout"}

// filenameVerbs take -f as --filename (logs takes it as --follow).
var filenameVerbs = []string{"get", "describe", "apply", "diff", "patch", "scale", "delete", "annotate", "label", "wait"}

// Parse reads a command line as a shell would split it, without a shell,
// and returns the kubectl command it is, or a Refusal that says why it
// does not run. $NS is the learner's namespace, as the challenges' hints
// write it.
func Parse(line, namespace string) (Command, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return Command{}, refuse("type a kubectl command, such as kubectl get databases")
	}
	if len(line) > maxLine {
		return Command{}, refuse("the command is %d characters long; the terminal takes %d at most", len(line), maxLine)
	}
	words, err := split(line, namespace)
	if err != nil {
		return Command{}, err
	}
	prefixed := words[0] == "kubectl" || words[0] == "k"
	if prefixed {
		words = words[1:]
	}
	// Another identity or the server's own settings, wherever they are on
	// the line, are refused for what they are.
	for _, w := range words {
		if !strings.HasPrefix(w, "-") || w == "-" {
			continue
		}
		for _, fl := range flagsOf("", w) {
			if slices.Contains(identityFlags, fl.name) || slices.Contains(hostFlags, fl.name) {
				return Command{}, check("", fl.name, "", &Command{})
			}
		}
	}
	if len(words) == 0 || strings.HasPrefix(words[0], "-") {
		return Command{}, refuse("start with kubectl's verb, such as kubectl get databases; offered: %s", strings.Join(Verbs, ", "))
	}
	verb := words[0]
	if why, ok := refused[verb]; ok && !(verb == "auth" && len(words) > 1 && (words[1] == "can-i" || words[1] == "whoami")) {
		if verb == "help" || why == "" {
			return Command{}, refuse("the commands offered here: %s; each answers --help", strings.Join(Verbs, ", "))
		}
		return Command{}, refuse("%s", why)
	}
	if !slices.Contains(Verbs, verb) && verb != "auth" {
		if prefixed && looksLikeWord(verb) {
			return Command{}, refuse("kubectl %s is no command of kubectl's here (a plugin would be a program kubectl-%s, and none runs here); offered: %s", verb, verb, strings.Join(Verbs, ", "))
		}
		return Command{}, refuse("this terminal runs kubectl only: start with kubectl and a verb such as get; offered: %s", strings.Join(Verbs, ", "))
	}
	cmd := Command{Args: words}
	for i := 1; i < len(words); i++ {
		w := words[i]
		if w == "--" {
			break
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			continue
		}
		for _, fl := range flagsOf(verb, w) {
			value := fl.value
			if !fl.hasValue && fl.takesValue && i+1 < len(words) {
				value = words[i+1]
			}
			if err := check(verb, fl.name, value, &cmd); err != nil {
				return Command{}, err
			}
		}
	}
	if verb == "wait" {
		cmd.Long = true
	}
	return cmd, nil
}

// check refuses a flag the terminal does not offer, saying why, and notes
// what the command's flags make of it.
func check(verb, name, value string, cmd *Command) error {
	switch {
	case slices.Contains(identityFlags, name):
		return refuse("--%s is not offered: this terminal acts as your lab's ServiceAccount, with the token and RBAC of your downloaded kubeconfig, and as no other identity", name)
	case slices.Contains(hostFlags, name):
		return refuse("--%s is not offered: it is about the computer kubectl runs on, here the server; the terminal's own limits apply", name)
	case (name == "f" || name == "filename") && slices.Contains(filenameVerbs, verb):
		if value != "-" {
			return refuse("-f reads the editor below here (-f -): this terminal reads no file of the server's and fetches no URL (you gave %q)", value)
		}
		cmd.Stdin = true
	case name == "k" || name == "kustomize":
		return refuse("-k reads a folder of files: this terminal reads no file (use apply -f - with the editor below)")
	case name == "patch-file":
		return refuse("--patch-file reads a file: give the patch inline with -p, or write the object in the editor and use apply -f -")
	case name == "o" || name == "output":
		if strings.Contains(value, "-file") {
			return refuse("-o %s reads a file of the server's: give the template inline (-o jsonpath=…, -o go-template=…, -o custom-columns=…)", value)
		}
	case name == "w" || name == "watch" || name == "watch-only" || (verb == "logs" && (name == "f" || name == "follow")):
		cmd.Long = true
	}
	return nil
}

// aFlag is one flag of a word: its name, the value the word gives it, and
// whether it takes a value (so the next word may be it).
type aFlag struct {
	name, value          string
	hasValue, takesValue bool
}

// flagsOf reads the flags of one word as kubectl's flag parser does:
// --name=value or --name, and -x, -xVALUE, -x=VALUE, or several one-letter
// flags together (-Rf FILE), the first that takes a value ending them.
func flagsOf(verb, w string) []aFlag {
	if rest, ok := strings.CutPrefix(w, "--"); ok {
		name, value, has := strings.Cut(rest, "=")
		return []aFlag{{name: name, value: value, hasValue: has, takesValue: true}}
	}
	// One-letter flags that take a value; logs' -f and -p are switches.
	valued := "nloLkcfpsv"
	if verb == "logs" {
		valued = "nloLkcsv"
	}
	var out []aFlag
	rest := strings.TrimPrefix(w, "-")
	for j := 0; j < len(rest); j++ {
		c := rest[j : j+1]
		if strings.Contains(valued, c) {
			v := strings.TrimPrefix(rest[j+1:], "=")
			return append(out, aFlag{name: c, value: v, hasValue: v != "", takesValue: true})
		}
		out = append(out, aFlag{name: c})
	}
	return out
}

func looksLikeWord(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return s != ""
}

// split cuts line into words as a POSIX shell does with quotes and
// backslashes, and refuses what only a shell would do with it: pipes,
// redirects, lists, substitutions and variables ($NS excepted).
func split(line, namespace string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	const shellWords = "no shell here: pipes (|), redirects (> <), lists (; &&), background (&) and substitutions ($(…), `…`) are not run; kubectl's own -o jsonpath=…, --sort-by and -l do what a pipe to grep or jq would"
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, refuse("a quote (') is not closed")
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				} else if line[i] == '`' || (line[i] == '$' && i+1 < len(line) && line[i+1] == '(') {
					return nil, refuse("%s", shellWords)
				} else if line[i] == '$' {
					v, n, err := variable(line[i+1:], namespace)
					if err != nil {
						return nil, err
					}
					cur.WriteString(v)
					i += n
					continue
				}
				cur.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, refuse("a quote (\") is not closed")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(line) {
				i++
				cur.WriteByte(line[i])
			}
			inWord = true
		case strings.IndexByte("|&;<>`()", c) >= 0:
			return nil, refuse("%s", shellWords)
		case c == '$':
			if i+1 < len(line) && line[i+1] == '(' {
				return nil, refuse("%s", shellWords)
			}
			v, n, err := variable(line[i+1:], namespace)
			if err != nil {
				return nil, err
			}
			cur.WriteString(v)
			i += n
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, refuse("type a kubectl command, such as kubectl get databases")
	}
	return words, nil
}

// variable reads the name after a $: NS (or {NS}) is the learner's
// namespace; there is no other.
func variable(rest, namespace string) (string, int, error) {
	for _, name := range []string{"{NS}", "NS"} {
		if strings.HasPrefix(rest, name) && (len(rest) == len(name) || !isNameByte(rest[len(name)])) {
			return namespace, len(name), nil
		}
	}
	n := 0
	for n < len(rest) && (isNameByte(rest[n]) || rest[n] == '{' || rest[n] == '}') {
		n++
	}
	return "", 0, refuse("no shell variables here: $NS is your namespace (%s), and there is no $%s", namespace, rest[:n])
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
