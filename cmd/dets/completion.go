package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

var completionCmd = &command{
	name:    "completion",
	summary: "print a bash or zsh completion script",
	usage:   "dets completion bash|zsh",
	help: `Prints a script that completes dets' commands, their flags, the values of
flags with a fixed set of values (--format, --repair, --kind) and file
names. Load it in the shell's startup file.`,
	example: `  source <(dets completion bash)           # in ~/.bashrc
  dets completion zsh > "${fpath[1]}/_dets"  # zsh, then restart it`,
	noCommon: true,
	setup: func(fs *flag.FlagSet, c *cmdCtx) func([]string) error {
		return func(args []string) error {
			if err := exactArgs("completion", args, 1, 1, "SHELL (bash or zsh)"); err != nil {
				return err
			}
			switch args[0] {
			case "bash":
				_, err := io.WriteString(c.stdout, bashCompletion())
				return err
			case "zsh":
				_, err := io.WriteString(c.stdout, zshCompletion())
				return err
			}
			return usagef("unknown shell %q: bash or zsh", args[0])
		}
	},
}

// flagValues are the fixed values some flags take, for completion;
// "command:flag" overrides "flag".
var flagValues = map[string][]string{
	"format":      {"erlang", "json"},
	"load:format": {"otp9", "native"},
	"syntax":      {"auto", "erlang", "json"},
	"repair":      {"no", "auto", "force"},
	"kind":        {"set", "bag", "duplicate_bag"},
}

func valuesOf(cmd, flagName string) ([]string, bool) {
	if v, ok := flagValues[cmd+":"+flagName]; ok {
		return v, true
	}
	v, ok := flagValues[flagName]
	return v, ok
}

// completionWords lists each visible command with its flags (with "--").
func completionWords() (names []string, flags map[string][]string) {
	flags = map[string][]string{}
	for _, c := range commands {
		if c.hidden {
			continue
		}
		names = append(names, c.name)
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		if !c.noCommon {
			fs.String("wait", "", "")
			if !c.readOnly {
				fs.String("repair", "", "")
			}
		}
		c.setup(fs, &cmdCtx{})
		var fl []string
		fs.VisitAll(func(f *flag.Flag) { fl = append(fl, "--"+f.Name) })
		sort.Strings(fl)
		flags[c.name] = append(fl, "--help")
	}
	names = append(names, "help")
	return names, flags
}

func bashCompletion() string {
	names, flags := completionWords()
	var b strings.Builder
	b.WriteString("# bash completion for dets (dets completion bash)\n_dets() {\n")
	b.WriteString("    local cur prev cmd\n    cur=\"${COMP_WORDS[COMP_CWORD]}\"\n    prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n    cmd=\"${COMP_WORDS[1]}\"\n")
	fmt.Fprintf(&b, "    if [ \"$COMP_CWORD\" -eq 1 ]; then\n        COMPREPLY=($(compgen -W %q -- \"$cur\"))\n        return\n    fi\n", strings.Join(names, " "))
	b.WriteString("    case \"$cmd:$prev\" in\n")
	for _, n := range names {
		for _, f := range flags[n] {
			if vals, ok := valuesOf(n, strings.TrimPrefix(f, "--")); ok {
				fmt.Fprintf(&b, "    %s:%s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return ;;\n", n, f, strings.Join(vals, " "))
			}
		}
	}
	b.WriteString("    *:--wait|*:--keypos|*:--slot|*:--offset) return ;;\n    esac\n")
	b.WriteString("    local flags=\"\"\n    case \"$cmd\" in\n")
	for _, n := range names {
		if fl := flags[n]; len(fl) > 0 && n != "completion" {
			fmt.Fprintf(&b, "    %s) flags=%q ;;\n", n, strings.Join(fl, " "))
		}
	}
	b.WriteString("    help) COMPREPLY=($(compgen -W \"" + strings.Join(names, " ") + "\" -- \"$cur\")); return ;;\n")
	b.WriteString("    completion) COMPREPLY=($(compgen -W \"bash zsh\" -- \"$cur\")); return ;;\n")
	b.WriteString("    esac\n")
	b.WriteString("    if [[ \"$cur\" == -* ]]; then\n        COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n    else\n        COMPREPLY=($(compgen -f -- \"$cur\"))\n    fi\n}\n")
	b.WriteString("complete -o filenames -F _dets dets\n")
	return b.String()
}

func zshCompletion() string {
	names, flags := completionWords()
	var b strings.Builder
	b.WriteString("#compdef dets\n# zsh completion for dets (dets completion zsh)\n_dets() {\n")
	b.WriteString("    local -a cmds\n    cmds=(")
	for _, n := range names {
		summary := ""
		if c := lookupCommand(n); c != nil {
			summary = c.summary
		} else if n == "help" {
			summary = "print the overview or a command's help"
		}
		fmt.Fprintf(&b, "\n        %s", zshQuote(n+":"+summary))
	}
	b.WriteString("\n    )\n")
	b.WriteString("    if (( CURRENT == 2 )); then\n        _describe 'command' cmds\n        return\n    fi\n")
	b.WriteString("    case $words[2] in\n")
	for _, n := range names {
		fl := flags[n]
		if len(fl) == 0 {
			continue
		}
		fmt.Fprintf(&b, "    %s)\n        _arguments", n)
		for _, f := range fl {
			name := strings.TrimPrefix(f, "--")
			switch vals, ok := valuesOf(n, name); {
			case ok:
				fmt.Fprintf(&b, " %s", zshQuote(f+"[]:"+name+":("+strings.Join(vals, " ")+")"))
			case name == "wait" || name == "backup" || name == "keypos" || name == "out" || name == "slot" || name == "offset":
				fmt.Fprintf(&b, " %s", zshQuote(f+"[]:"+name+":"))
			default:
				fmt.Fprintf(&b, " %s", zshQuote(f+"[]"))
			}
		}
		b.WriteString(" '*:file:_files' ;;\n")
	}
	b.WriteString("    completion) _values 'shell' bash zsh ;;\n")
	b.WriteString("    help) _describe 'command' cmds ;;\n")
	b.WriteString("    *) _files ;;\n    esac\n}\n_dets \"$@\"\n")
	return b.String()
}

func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
