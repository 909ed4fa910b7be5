# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_brute_global_optspecs
    string join \n p/prompt= C/cd= provider= m/model= base-url= max-turns= script= no-stream tools= no-tools sandbox= yolo permission-mode= effort= add-dir= i/image= output-format= input-format= include-partial-messages permission-prompt-tool= system-prompt= append-system-prompt= allowedTools= disallowedTools= verbose setting-sources= betas= fallback-model= include-hook-events max-thinking-tokens= thinking= thinking-display= c/continue r/resume= q/quiet h/help V/version
end

function __fish_brute_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_brute_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_brute_using_subcommand
    set -l cmd (__fish_brute_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c brute -n "__fish_brute_needs_command" -s p -l prompt -d 'Run one task headless and print the answer. Piped stdin is added to PROMPT; `-p -`, or `-p` with no text and stdin piped, reads the whole prompt from stdin' -r
complete -c brute -n "__fish_brute_needs_command" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_needs_command" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_needs_command" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_needs_command" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_needs_command" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_needs_command" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_needs_command" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_needs_command" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_needs_command" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_needs_command" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_needs_command" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_needs_command" -s i -l image -d 'Attach an image (PNG, JPEG, GIF or WebP) to the first prompt (repeatable)' -r -F
complete -c brute -n "__fish_brute_needs_command" -l output-format -d 'Output format for -p' -r -f -a "text\t'The answer streamed as text; tool activity on stderr'
json\t'One JSON object at the end: the result (Claude Code\'s shape, plus brute\'s fields)'
stream-json\t'Claude Code\'s message stream: system/init, assistant and user messages, a result per turn'
events\t'brute\'s own events as JSON lines, between the init line and the result'"
complete -c brute -n "__fish_brute_needs_command" -l input-format -d 'Where headless prompts come from: text (the -p prompt) or stream-json (user messages and Claude Code\'s control requests as JSON lines on stdin, many turns in one process)' -r -f -a "text\t'The -p prompt (with piped stdin added)'
stream-json\t'Claude Code\'s stream-json: user messages and control requests as JSON lines'"
complete -c brute -n "__fish_brute_needs_command" -l permission-prompt-tool -d 'Ask approvals through the program on stdin (`stdio`: Claude Code\'s `can_use_tool` control requests; needs --input-format stream-json)' -r -f -a "stdio\t''"
complete -c brute -n "__fish_brute_needs_command" -l system-prompt -d 'Replace brute\'s system prompt with TEXT (empty keeps brute\'s own)' -r
complete -c brute -n "__fish_brute_needs_command" -l append-system-prompt -d 'Add TEXT to the end of the system prompt' -r
complete -c brute -n "__fish_brute_needs_command" -l allowedTools -d 'Permission rules that allow calls without asking, comma- or space-separated (`shell(cargo test*)`; Claude Code\'s `Bash(git log:*)`, `Edit`, `Read` are understood)' -r
complete -c brute -n "__fish_brute_needs_command" -l disallowedTools -d 'Permission rules that refuse calls, like --allowedTools' -r
complete -c brute -n "__fish_brute_needs_command" -l setting-sources -d 'Accepted for Claude Code\'s SDK; brute reads its own config files (user, then a trusted project\'s), whatever the list says' -r
complete -c brute -n "__fish_brute_needs_command" -l betas -r
complete -c brute -n "__fish_brute_needs_command" -l fallback-model -r
complete -c brute -n "__fish_brute_needs_command" -l max-thinking-tokens -r
complete -c brute -n "__fish_brute_needs_command" -l thinking -r
complete -c brute -n "__fish_brute_needs_command" -l thinking-display -r
complete -c brute -n "__fish_brute_needs_command" -s r -l resume -d 'Resume a session of this directory; without an ID, list them to pick one' -r
complete -c brute -n "__fish_brute_needs_command" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_needs_command" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_needs_command" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_needs_command" -l include-partial-messages -d 'With --output-format stream-json: also print the model\'s stream as it arrives (`stream_event` lines)'
complete -c brute -n "__fish_brute_needs_command" -l verbose -d 'Accepted for Claude Code\'s tools; brute prints the same either way'
complete -c brute -n "__fish_brute_needs_command" -l include-hook-events
complete -c brute -n "__fish_brute_needs_command" -s c -l continue -d 'Continue the latest session of this directory (also with -p)'
complete -c brute -n "__fish_brute_needs_command" -s q -l quiet -d 'With -p: no tool activity lines on stderr'
complete -c brute -n "__fish_brute_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_needs_command" -s V -l version -d 'Print version'
complete -c brute -n "__fish_brute_needs_command" -a "config" -d 'Show the effective settings and where each came from (keys hidden)'
complete -c brute -n "__fish_brute_needs_command" -a "undo" -d 'Undo the last turn of the latest session in this directory (files and conversation)'
complete -c brute -n "__fish_brute_needs_command" -a "redo" -d 'Re-apply the turn the last undo took back'
complete -c brute -n "__fish_brute_needs_command" -a "permissions" -d 'List the sandbox mode and the permission rules in effect here, with their sources'
complete -c brute -n "__fish_brute_needs_command" -a "trust" -d 'Trust a project directory (default: this one): its .brute/config.toml may then set the provider, base URL, command tools, sandbox and permission rules'
complete -c brute -n "__fish_brute_needs_command" -a "untrust" -d 'Stop trusting a project directory (default: this one)'
complete -c brute -n "__fish_brute_needs_command" -a "mcp" -d 'Manage MCP servers: list, show, add or remove them (add and remove edit the user config file)'
complete -c brute -n "__fish_brute_needs_command" -a "acp" -d 'Serve the Agent Client Protocol on stdin and stdout, for editors (Zed, JetBrains, Neovim, Emacs): `brute acp [FLAGS]`, with the usual provider, model and sandbox flags'
complete -c brute -n "__fish_brute_needs_command" -a "completions" -d 'Print shell completions'
complete -c brute -n "__fish_brute_needs_command" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c brute -n "__fish_brute_using_subcommand config" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand config" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand config" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand config" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand config" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand config" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand config" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand config" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand config" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand config" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand config" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand config" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand config" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand config" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand config" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand undo" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand undo" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand undo" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand undo" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand undo" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand undo" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand undo" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand undo" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand undo" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand undo" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand undo" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand undo" -l list -d 'List the checkpoints instead'
complete -c brute -n "__fish_brute_using_subcommand undo" -l force -d 'Overwrite files changed since the agent\'s turn instead of skipping them'
complete -c brute -n "__fish_brute_using_subcommand undo" -l code-only -d 'Restore the files but keep the conversation as it is'
complete -c brute -n "__fish_brute_using_subcommand undo" -l partial -d 'When some stored contents are missing, restore the other files anyway'
complete -c brute -n "__fish_brute_using_subcommand undo" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand undo" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand undo" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand undo" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand redo" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand redo" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand redo" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand redo" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand redo" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand redo" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand redo" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand redo" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand redo" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand redo" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand redo" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand redo" -l force -d 'Overwrite files changed since the undo instead of skipping them'
complete -c brute -n "__fish_brute_using_subcommand redo" -l partial -d 'When some stored contents are missing, re-apply the other files anyway'
complete -c brute -n "__fish_brute_using_subcommand redo" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand redo" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand redo" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand redo" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand permissions" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand permissions" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand permissions" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand permissions" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand permissions" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand permissions" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand permissions" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand permissions" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand permissions" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand permissions" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand permissions" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand permissions" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand permissions" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand permissions" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand permissions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand trust" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand trust" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand trust" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand trust" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand trust" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand trust" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand trust" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand trust" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand trust" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand trust" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand trust" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand trust" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand trust" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand trust" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand trust" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand untrust" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand untrust" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand untrust" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand untrust" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand untrust" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand untrust" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand untrust" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand untrust" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand untrust" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand untrust" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand untrust" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand untrust" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand untrust" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand untrust" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand untrust" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -f -a "list" -d 'List the configured servers: name, transport, command or URL, enabled, source'
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -f -a "get" -d 'Show one server\'s settings'
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -f -a "add" -d 'Add a server to the user config: `brute mcp add NAME -- COMMAND [ARGS...]` (stdio) or `brute mcp add NAME --url URL` (streamable HTTP)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -f -a "remove" -d 'Remove a server from the user config'
complete -c brute -n "__fish_brute_using_subcommand mcp; and not __fish_seen_subcommand_from list get add remove help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from get" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -s e -l env -d 'An environment variable for the server (repeatable)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l url -d 'A streamable HTTP endpoint instead of a command' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from add" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from remove" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the configured servers: name, transport, command or URL, enabled, source'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "get" -d 'Show one server\'s settings'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "add" -d 'Add a server to the user config: `brute mcp add NAME -- COMMAND [ARGS...]` (stdio) or `brute mcp add NAME --url URL` (streamable HTTP)'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "remove" -d 'Remove a server from the user config'
complete -c brute -n "__fish_brute_using_subcommand mcp; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c brute -n "__fish_brute_using_subcommand acp" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand acp" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand acp" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand acp" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand acp" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand acp" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand acp" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand acp" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand acp" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand acp" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand acp" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand acp" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand acp" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand acp" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand acp" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand completions" -s C -l cd -d 'Change to DIR before anything else (as `git -C`: other relative paths start there)' -r -F
complete -c brute -n "__fish_brute_using_subcommand completions" -l provider -d 'Provider: openai, anthropic, responses, ollama or replay' -r
complete -c brute -n "__fish_brute_using_subcommand completions" -s m -l model -d 'Model name, as the provider spells it' -r
complete -c brute -n "__fish_brute_using_subcommand completions" -l base-url -d 'Provider base URL (OpenAI-style ends in /v1; Anthropic-style is the host root)' -r
complete -c brute -n "__fish_brute_using_subcommand completions" -l max-turns -d 'Maximum model requests per user turn (default 100)' -r
complete -c brute -n "__fish_brute_using_subcommand completions" -l script -d 'Script for the replay provider (default: the built-in demo)' -r -F
complete -c brute -n "__fish_brute_using_subcommand completions" -l tools -d 'Only offer these tools (comma-separated)' -r
complete -c brute -n "__fish_brute_using_subcommand completions" -l sandbox -d 'What commands may do: read-only, workspace-write (default) or full-access' -r -f -a "read-only\t''
workspace-write\t''
full-access\t''"
complete -c brute -n "__fish_brute_using_subcommand completions" -l permission-mode -d 'Claude Code\'s permission modes, mapped onto brute\'s (plan: read-only, ends with a plan)' -r -f -a "default\t'The configured sandbox mode (workspace-write unless config says otherwise)'
acceptEdits\t'workspace-write: edits in the project and confined commands need no approval'
plan\t'Plan mode: read-only tools and commands; the model ends with a plan'
bypassPermissions\t'The same as --yolo: full access, no approval prompts'
dontAsk\t'The configured sandbox mode, and nobody is asked: what would need approval is denied'"
complete -c brute -n "__fish_brute_using_subcommand completions" -l effort -d 'How hard reasoning models think (Claude\'s extended thinking, OpenAI\'s reasoning effort)' -r -f -a "low\t''
medium\t''
high\t''"
complete -c brute -n "__fish_brute_using_subcommand completions" -l add-dir -d 'Another directory commands and tools may write (repeatable; relative to -C\'s DIR)' -r -F
complete -c brute -n "__fish_brute_using_subcommand completions" -l no-stream -d 'Ask for whole responses instead of streams (for servers that cannot stream tool calls)'
complete -c brute -n "__fish_brute_using_subcommand completions" -l no-tools -d 'Offer no tools at all'
complete -c brute -n "__fish_brute_using_subcommand completions" -l yolo -d 'Full access and no approval prompts (only where you would run anything yourself)'
complete -c brute -n "__fish_brute_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "config" -d 'Show the effective settings and where each came from (keys hidden)'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "undo" -d 'Undo the last turn of the latest session in this directory (files and conversation)'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "redo" -d 'Re-apply the turn the last undo took back'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "permissions" -d 'List the sandbox mode and the permission rules in effect here, with their sources'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "trust" -d 'Trust a project directory (default: this one): its .brute/config.toml may then set the provider, base URL, command tools, sandbox and permission rules'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "untrust" -d 'Stop trusting a project directory (default: this one)'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "mcp" -d 'Manage MCP servers: list, show, add or remove them (add and remove edit the user config file)'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "acp" -d 'Serve the Agent Client Protocol on stdin and stdout, for editors (Zed, JetBrains, Neovim, Emacs): `brute acp [FLAGS]`, with the usual provider, model and sandbox flags'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "completions" -d 'Print shell completions'
complete -c brute -n "__fish_brute_using_subcommand help; and not __fish_seen_subcommand_from config undo redo permissions trust untrust mcp acp completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c brute -n "__fish_brute_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "list" -d 'List the configured servers: name, transport, command or URL, enabled, source'
complete -c brute -n "__fish_brute_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "get" -d 'Show one server\'s settings'
complete -c brute -n "__fish_brute_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "add" -d 'Add a server to the user config: `brute mcp add NAME -- COMMAND [ARGS...]` (stdio) or `brute mcp add NAME --url URL` (streamable HTTP)'
complete -c brute -n "__fish_brute_using_subcommand help; and __fish_seen_subcommand_from mcp" -f -a "remove" -d 'Remove a server from the user config'
