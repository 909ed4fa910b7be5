//! Unit tests of the rules as a whole: parsing, the argument each tool's patterns see, paths,
//! decisions on shell lines and config.

use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::subject::normalize_path;
use super::*;

use super::test_subjects::subject;

/// A rule's pattern read as its tool reads it (an allow reading).
trait ForTool {
    fn matches_for_tool(&self, text: &str) -> bool;
}

impl ForTool for Rule {
    fn matches_for_tool(&self, text: &str) -> bool {
        self.pattern_matches(text, subject(self.tool()).syntax(), false)
    }
}

fn rule(text: &str) -> Rule {
    Rule::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn rules(allow: &[&str], deny: &[&str], ask: &[&str]) -> Rules {
    let config = PermissionsConfig {
        allow: allow.iter().map(|s| s.to_string()).collect(),
        deny: deny.iter().map(|s| s.to_string()).collect(),
        ask: ask.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    Rules::from_config(&config, Source::Session).expect("valid rules")
}

fn shell(rules: &Rules, command: &str) -> Decision {
    rules.decide("shell", subject("shell"), &json!({ "command": command }))
}

/// The rule text of a decision, with its kind, for compact assertions.
fn verdict(decision: &Decision) -> String {
    match decision {
        Decision::Allow(m) => format!("allow {}", m.rule),
        Decision::Deny(m) => format!("deny {}", m.rule),
        Decision::Ask(Some(m)) => format!("ask {}", m.rule),
        Decision::Ask(None) => "ask".to_owned(),
        Decision::Default => "default".to_owned(),
    }
}

fn allowed(rules: &Rules, command: &str) -> bool {
    matches!(shell(rules, command), Decision::Allow(_))
}

// --- parsing ---

#[test]
fn parses_bare_tools_and_patterns() {
    let read = rule("read");
    assert_eq!((read.tool(), read.pattern()), ("read", None));
    let test = rule("shell(cargo test*)");
    assert_eq!((test.tool(), test.pattern()), ("shell", Some("cargo test*")));
    let spaced = rule("  write( src/** )  ");
    assert_eq!(
        (spaced.tool(), spaced.pattern(), spaced.as_str()),
        ("write", Some("src/**"), "write(src/**)")
    );
    assert_eq!(rule("mcp__github__*").tool(), "mcp__github__*");
    assert_eq!(rule("fetch(https://docs.rs/*)").pattern(), Some("https://docs.rs/*"));
    // Balanced and escaped parentheses inside the pattern.
    assert_eq!(rule("shell(echo $(date))").pattern(), Some("echo $(date)"));
    assert_eq!(rule(r"shell(echo \()").pattern(), Some(r"echo \("));
    assert_eq!(rule(r"shell(echo \))").pattern(), Some(r"echo \)"));
    assert_eq!("shell(git status)".parse::<Rule>(), Ok(rule("shell(git status)")));
    assert_eq!(rule("shell(git status)").to_string(), "shell(git status)");
}

/// A pattern is read as its tool says: `[` is no path glob, so `write([)` is reported for the
/// tools whose rules read paths (before a session starts), is plain text for `shell`, and, should
/// it meet a path tool anyway, a deny rule with it refuses every call and an allow rule none.
#[test]
fn a_pattern_no_path_tool_can_read_is_reported_and_fails_closed() {
    let broken = rule("write([)");
    assert!(broken.path_pattern_error().is_some());
    assert!(
        rule("shell([)").path_pattern_error().is_some(),
        "the pattern, whatever the tool"
    );
    let config = PermissionsConfig {
        deny: vec!["*([)".into()],
        ..Default::default()
    };
    let deny = Rules::from_config(&config, Source::File(PathBuf::from("/p/.brute/config.toml"))).expect("parses");
    let error = deny.check_patterns("write", subject("write")).unwrap_err().to_string();
    assert_eq!(
        error,
        "/p/.brute/config.toml: permissions.deny: permission rule `*([)`: not a valid path pattern for `write`: unclosed character class; missing ']'"
    );
    assert!(deny.check_patterns("shell", subject("shell")).is_ok());
    assert!(deny.check_patterns("mcp__x__y", subject("mcp__x__y")).is_ok());
    assert_eq!(verdict(&shell(&deny, "[")), "deny *([)");
    assert_eq!(verdict(&shell(&deny, "echo x")), "default");
    let write =
        |rules: &Rules, path: &str| verdict(&rules.decide("write", subject("write"), &json!({"file_path": path})));
    assert_eq!(write(&deny, "anything.rs"), "deny *([)");
    assert_eq!(write(&rules(&["write([)"], &[], &[]), "["), "default");
}

#[test]
fn rejects_malformed_rules() {
    let cases = [
        ("", "EmptyTool"),
        ("   ", "EmptyTool"),
        ("(cargo test)", "EmptyTool"),
        ("shell(cargo test", "Unbalanced"),
        ("shell)", "Unbalanced"),
        ("shell(a))", "Unbalanced"),
        ("shell(a)b", "Unbalanced"),
        ("shell(a(b)", "Unbalanced"),
        ("shell()", "EmptyPattern"),
        ("shell(  )", "EmptyPattern"),
        ("sh ell", "InvalidTool"),
        ("shell (x)", "InvalidTool"),
        ("mcp__[", "Glob"),
    ];
    for (text, expected) in cases {
        match Rule::parse(text) {
            Ok(rule) => panic!("{text:?} parsed as {rule}"),
            Err(e) => assert!(
                format!("{e:?}").starts_with(expected),
                "{text:?}: unexpected error {e:?}"
            ),
        }
    }
    let message = Rule::parse("shell(cargo test")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        message.contains("`shell(cargo test`") && message.contains("unbalanced"),
        "{message}"
    );
    let message = Rule::parse("shell()").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("write `shell` alone"), "{message}");
}

#[test]
fn text_patterns_treat_only_star_as_special() {
    let awk = rule("shell(awk '{print $1}' *)");
    assert!(awk.matches_for_tool("awk '{print $1}' data.txt"));
    let test = rule("shell([ -f x? ])");
    assert!(test.matches_for_tool("[ -f x? ]"));
    assert!(!test.matches_for_tool("[ -f xy ]"));
    let star = rule(r"shell(echo \*)");
    assert!(star.matches_for_tool("echo *") && !star.matches_for_tool("echo x"));
    let grep = rule(r"shell(grep 'a\|b' *)");
    assert!(grep.matches_for_tool(r"grep 'a\|b' src"));
    // `*` crosses slashes and spaces; `**` is the same as `*`.
    let any = rule("shell(ls ** end)");
    assert!(any.matches_for_tool("ls /a/b c/d end"));
}

#[test]
fn path_patterns_use_glob_syntax_and_cross_slashes() {
    let rs = rule("write(src/*.{rs,toml})");
    assert!(rs.matches_for_tool("src/a.rs") && rs.matches_for_tool("src/deep/b.toml"));
    assert!(!rs.matches_for_tool("src/a.md"));
    let tree = rule("write(src/**)");
    assert!(tree.matches_for_tool("src/a/b/c.rs") && !tree.matches_for_tool("tests/a.rs"));
}

#[test]
fn exact_rules_escape_metacharacters() {
    let command = r"echo '*' \( done) | grep a\|b";
    let exact = Rule::exact("shell", subject("shell"), command).expect("exact shell rule");
    assert!(exact.matches_for_tool(command));
    assert!(!exact.matches_for_tool(r"echo 'x' \( done) | grep a\|b"));
    let path = "src/[a]{b}*?(c).rs";
    let exact = Rule::exact("write", subject("write"), path).expect("exact path rule");
    assert!(exact.matches_for_tool(path) && !exact.matches_for_tool("src/ab.rs"));
}

// --- which argument a pattern sees ---

#[test]
fn maps_each_tool_to_its_argument() {
    let all = json!({"command": "c", "file_path": "f", "path": "p", "url": "u", "other": "o"});
    for (tool, expected) in [
        ("shell", "c"),
        ("write", "f"),
        ("patch", "f"),
        ("read", "f"),
        ("remove", "p"),
        ("undo", "p"),
        ("fs_search", "p"),
        ("fetch", "u"),
        ("my_command_tool", "c"),
        ("mcp__github__create_issue", "c"),
    ] {
        assert_eq!(argument(subject(tool), &all).as_deref(), Some(expected), "{tool}");
    }
    // Other tools: the first of command, path, file_path, url…
    assert_eq!(
        argument(subject("lint"), &json!({"url": "u", "file_path": "f"})).as_deref(),
        Some("f")
    );
    assert_eq!(
        argument(subject("lint"), &json!({"url": "u", "n": 3})).as_deref(),
        Some("u")
    );
    // …else the whole arguments JSON.
    assert_eq!(
        argument(subject("mcp__x__y"), &json!({"title": "t"})).as_deref(),
        Some(r#"{"title":"t"}"#)
    );
    // Built-ins without their argument (or with a non-string one) have none.
    assert_eq!(argument(subject("shell"), &json!({"cmd": "ls"})), None);
    assert_eq!(argument(subject("read"), &json!({"file_path": 3})), None);
    assert_eq!(argument(subject("fs_search"), &json!({"pattern": "x"})), None);
}

#[test]
fn patterns_see_the_right_argument() {
    let rules = rules(
        &["write(src/**)", "fs_search(src/**)", "fetch(https://docs.rs/*)"],
        &[],
        &[],
    );
    let allow = |tool: &str, args: Value| matches!(rules.decide(tool, subject(tool), &args), Decision::Allow(_));
    assert!(allow("write", json!({"file_path": "src/a.rs", "content": "x"})));
    assert!(!allow(
        "write",
        json!({"file_path": "tests/a.rs", "content": "src/a.rs"})
    ));
    assert!(!allow("patch", json!({"file_path": "src/a.rs"})), "rules are per tool");
    assert!(allow("fs_search", json!({"path": "src/tool", "pattern": "fn"})));
    assert!(
        !allow("fs_search", json!({"pattern": "fn"})),
        "no path means the whole project"
    );
    assert!(allow("fetch", json!({"url": "https://docs.rs/globset"})));
    assert!(!allow("fetch", json!({"url": "https://docs.rs@evil.example/"})));
}

#[test]
fn bare_tool_rules_match_every_call() {
    let rules = rules(&["read"], &["remove"], &[]);
    assert_eq!(
        verdict(&rules.decide("read", subject("read"), &json!({"file_path": "../../etc/passwd"}))),
        "allow read"
    );
    assert_eq!(
        verdict(&rules.decide("read", subject("read"), &json!({}))),
        "allow read"
    );
    assert_eq!(
        verdict(&rules.decide("remove", subject("remove"), &json!({"path": "x"}))),
        "deny remove"
    );
    assert_eq!(
        verdict(&rules.decide("write", subject("write"), &json!({"file_path": "x"}))),
        "default"
    );
}

// --- precedence ---

#[test]
fn deny_beats_ask_beats_allow() {
    let all = rules(&["shell(git *)"], &["shell(git push*)"], &["shell(git p*)"]);
    assert_eq!(verdict(&shell(&all, "git push origin")), "deny shell(git push*)");
    assert_eq!(verdict(&shell(&all, "git pull")), "ask shell(git p*)");
    assert_eq!(verdict(&shell(&all, "git status")), "allow shell(git *)");
    assert_eq!(verdict(&shell(&all, "ls")), "default");
    // Precedence ignores list order and source.
    let merged = Rules::merge([rules(&["shell"], &[], &[]), rules(&[], &[], &["shell(rm *)"])]);
    assert_eq!(verdict(&shell(&merged, "rm -rf target")), "ask shell(rm *)");
    assert_eq!(verdict(&shell(&merged, "ls")), "allow shell");
}

#[test]
fn decisions_name_their_source() {
    let mut rules = Rules::from_config(
        &PermissionsConfig {
            deny: vec!["fetch".into()],
            ..Default::default()
        },
        Source::File(PathBuf::from("/home/me/.config/brute/config.toml")),
    )
    .expect("valid");
    rules.push(RuleKind::Allow, rule("read"), Source::Session);
    let Decision::Deny(m) = rules.decide("fetch", subject("fetch"), &json!({"url": "https://x"})) else {
        panic!("fetch should be denied");
    };
    assert_eq!(
        m.source,
        Source::File(PathBuf::from("/home/me/.config/brute/config.toml"))
    );
    let Decision::Allow(m) = rules.decide("read", subject("read"), &json!({"file_path": "a"})) else {
        panic!("read should be allowed");
    };
    assert_eq!((m.rule.as_str(), &m.source), ("read", &Source::Session));
}

// --- MCP and other tools ---

#[test]
fn tool_name_globs_match_mcp_tools() {
    let rules = rules(&["mcp__github__*"], &["mcp__*__delete_*"], &[]);
    let args = json!({"title": "bug"});
    assert_eq!(
        verdict(&rules.decide("mcp__github__create_issue", subject("mcp__github__create_issue"), &args)),
        "allow mcp__github__*"
    );
    assert_eq!(
        verdict(&rules.decide("mcp__gitlab__x", subject("mcp__gitlab__x"), &args)),
        "default"
    );
    assert_eq!(
        verdict(&rules.decide("mcp__github__delete_repo", subject("mcp__github__delete_repo"), &args)),
        "deny mcp__*__delete_*"
    );
    assert_eq!(verdict(&rules.decide("github", subject("github"), &args)), "default");
}

#[test]
fn other_tools_match_their_first_string_argument_or_the_json() {
    let rules = rules(
        &["mcp__fs__read(/work/*)", r#"mcp__kv__get(*"key":"public/*)"#],
        &[],
        &[],
    );
    assert!(matches!(
        rules.decide("mcp__fs__read", subject("mcp__fs__read"), &json!({"path": "/work/a/b"})),
        Decision::Allow(_)
    ));
    assert!(!matches!(
        rules.decide("mcp__fs__read", subject("mcp__fs__read"), &json!({"path": "/etc/x"})),
        Decision::Allow(_)
    ));
    assert!(matches!(
        rules.decide("mcp__kv__get", subject("mcp__kv__get"), &json!({"key": "public/a"})),
        Decision::Allow(_)
    ));
    assert!(!matches!(
        rules.decide("mcp__kv__get", subject("mcp__kv__get"), &json!({"key": "secret/a"})),
        Decision::Allow(_)
    ));
}

// --- paths ---

#[test]
fn paths_climbing_out_are_never_allowed_but_still_denied() {
    let rules = rules(&["write(src/**)", "read(*)"], &["write(.env)", "read(**/.env)"], &[]);
    let write = |path: &str| verdict(&rules.decide("write", subject("write"), &json!({"file_path": path})));
    assert_eq!(write("src/a.rs"), "allow write(src/**)");
    assert_eq!(write("./src//a.rs"), "allow write(src/**)");
    assert_eq!(write("src/../../etc/passwd"), "default");
    assert_eq!(write("src/x/../a.rs"), "default", "`..` is never allowed, even inside");
    assert_eq!(write("src/../.env"), "deny write(.env)");
    assert_eq!(write("./.env"), "deny write(.env)");
    let read = |path: &str| verdict(&rules.decide("read", subject("read"), &json!({"file_path": path})));
    assert_eq!(read("config/.env"), "deny read(**/.env)");
    assert_eq!(read("../other/README"), "default");
}

fn target(given: &str, relative: Option<&str>, absolute: &str) -> Facts {
    Facts {
        target: Some(Target {
            given: given.to_owned(),
            absolute: absolute.to_owned(),
            relative: relative.map(str::to_owned),
        }),
        unsandboxed: false,
    }
}

#[test]
fn allow_rules_must_match_where_a_path_really_leads() {
    let rules = rules(&["write(src/**)", "write(/proj/notes/*)"], &[], &[]);
    let write = |facts: &Facts| {
        let given = facts.target.as_ref().map(|t| t.given.clone()).unwrap_or_default();
        verdict(&rules.decide_call("write", subject("write"), &json!({ "file_path": given }), facts))
    };
    assert_eq!(
        write(&target("src/a.rs", Some("src/a.rs"), "/proj/src/a.rs")),
        "allow write(src/**)"
    );
    // `src/out` is a link leading out of the project, or out of `src/` inside it.
    assert_eq!(write(&target("src/out/x", None, "/elsewhere/x")), "default");
    assert_eq!(write(&target("src/out/x", Some("docs/x"), "/proj/docs/x")), "default");
    // The resolved path matches in its relative or its absolute form.
    assert_eq!(
        write(&target("/proj/notes/a", Some("notes/a"), "/proj/notes/a")),
        "allow write(/proj/notes/*)"
    );
    assert_eq!(
        write(&target("/proj/notes/a", Some("src/a"), "/proj/src/a")),
        "default",
        "the path as given must match too"
    );
    // Without facts the rules see the argument only (as before).
    assert_eq!(
        verdict(&rules.decide("write", subject("write"), &json!({"file_path": "src/out/x"}))),
        "allow write(src/**)"
    );
}

#[test]
fn deny_and_ask_rules_also_see_where_a_path_really_leads() {
    let rules = rules(&["write(**)"], &["write(secrets/**)"], &["remove(/etc/*)"]);
    let facts = target("link/key", Some("secrets/key"), "/proj/secrets/key");
    assert_eq!(
        verdict(&rules.decide_call("write", subject("write"), &json!({"file_path": "link/key"}), &facts)),
        "deny write(secrets/**)"
    );
    let facts = target("link/passwd", None, "/etc/passwd");
    assert_eq!(
        verdict(&rules.decide_call("remove", subject("remove"), &json!({"path": "link/passwd"}), &facts)),
        "ask remove(/etc/*)"
    );
}

#[test]
fn a_target_makes_any_tool_naming_its_path_a_path_rule() {
    let rules = rules(&["fmt(src/*)"], &[], &[]);
    let args = json!({"path": "src/out/x"});
    assert_eq!(verdict(&rules.decide("fmt", subject("fmt"), &args)), "allow fmt(src/*)");
    let facts = target("src/out/x", None, "/elsewhere/x");
    assert_eq!(
        verdict(&rules.decide_call("fmt", subject("fmt"), &args, &facts)),
        "default"
    );
    let climbing = json!({"path": "src/../../x"});
    let facts = target("src/../../x", None, "/x");
    assert_eq!(
        verdict(&rules.decide_call("fmt", subject("fmt"), &climbing, &facts)),
        "default"
    );
    // A target about another argument than the rule's does not change what it sees.
    let other = target("elsewhere", None, "/elsewhere");
    assert_eq!(
        verdict(&rules.decide_call("fmt", subject("fmt"), &args, &other)),
        "allow fmt(src/*)"
    );
}

#[test]
fn only_allow_unsandboxed_rules_allow_an_unsandboxed_call() {
    let mut rules = rules(&["shell(git status*)", "shell(echo *)"], &[], &[]);
    let unsandboxed = Facts {
        unsandboxed: true,
        ..Facts::default()
    };
    let call = |rules: &Rules, command: &str, facts: &Facts| {
        verdict(&rules.decide_call("shell", subject("shell"), &json!({ "command": command }), facts))
    };
    assert_eq!(
        call(&rules, "git status", &Facts::default()),
        "allow shell(git status*)"
    );
    assert_eq!(call(&rules, "git status", &unsandboxed), "default");
    rules.push(RuleKind::AllowUnsandboxed, rule("shell(git status*)"), Source::Session);
    assert_eq!(
        call(&rules, "git status > /x", &unsandboxed),
        "allow shell(git status*)"
    );
    let decided = rules.decide_call(
        "shell",
        subject("shell"),
        &json!({"command": "git status"}),
        &unsandboxed,
    );
    assert!(
        matches!(&decided, Decision::Allow(m) if m.kind == RuleKind::AllowUnsandboxed),
        "{decided:?}"
    );
    // Every part of an unsandboxed line needs an unsandboxed rule; a confined line may mix.
    assert_eq!(call(&rules, "git status && echo hi", &unsandboxed), "default");
    assert_eq!(
        call(&rules, "git status && echo hi", &Facts::default()),
        "allow shell(git status*)"
    );
    let only = Rules::from_config(
        &PermissionsConfig {
            allow_unsandboxed: vec!["shell".into()],
            deny: vec!["shell(rm *)".into()],
            ..Default::default()
        },
        Source::Session,
    )
    .expect("valid");
    assert_eq!(call(&only, "ls", &Facts::default()), "allow shell");
    assert_eq!(
        call(&only, "rm -rf x", &unsandboxed),
        "deny shell(rm *)",
        "deny still wins"
    );
}

#[test]
fn normalizes_paths_lexically() {
    for (path, expected) in [
        ("src/a.rs", "src/a.rs"),
        ("./src//./a.rs/", "src/a.rs"),
        ("src/../a", "a"),
        ("src/..", "."),
        ("", "."),
        ("../../x", "../../x"),
        ("a/../../x", "../x"),
        ("/a/../../etc", "/etc"),
    ] {
        assert_eq!(normalize_path(path), expected, "{path:?}");
    }
}

#[test]
fn missing_arguments_are_restricted_but_not_allowed() {
    let allow = rules(&["shell(*)"], &[], &[]);
    assert_eq!(verdict(&allow.decide("shell", subject("shell"), &json!({}))), "default");
    let deny = rules(&[], &["shell(rm *)"], &[]);
    assert_eq!(
        verdict(&deny.decide("shell", subject("shell"), &json!({"command": 7}))),
        "deny shell(rm *)"
    );
}

#[test]
fn allow_needs_every_part_deny_any_part() {
    let rules = rules(
        &["shell(cargo test*)", "shell(git status)"],
        &["shell(curl *)"],
        &["shell(rm *)"],
    );
    assert!(allowed(&rules, "cargo test --lib"));
    assert!(allowed(&rules, "cargo test && git status"));
    assert!(allowed(&rules, "git status\ncargo test -q"));
    assert!(!allowed(&rules, "cargo test && git status --short"));
    assert_eq!(verdict(&shell(&rules, "cargo test; curl x | sh")), "deny shell(curl *)");
    assert_eq!(verdict(&shell(&rules, "cargo test; wget x | sh")), "default");
    assert_eq!(verdict(&shell(&rules, "cargo test $(curl x)")), "deny shell(curl *)");
    assert_eq!(verdict(&shell(&rules, "cargo test $(wget x)")), "default");
    assert_eq!(verdict(&shell(&rules, "cargo test `wget x`")), "default");
    assert_eq!(
        verdict(&shell(&rules, "cargo test \"$(echo `rm -rf x`)\"")),
        "ask shell(rm *)"
    );
    assert_eq!(verdict(&shell(&rules, "cargo test & rm -rf ~")), "ask shell(rm *)");
    assert_eq!(verdict(&shell(&rules, "(curl x)")), "deny shell(curl *)");
    // A separator inside quotes is not a second command.
    let echo = self::rules(&["shell(echo *)"], &[], &[]);
    assert!(allowed(&echo, r#"echo "a; b""#));
    assert!(!allowed(&echo, "echo a; b"));
    assert!(!allowed(&echo, "echo 'a"), "an unclosed quote is never allowed");
    assert!(!allowed(&echo, ""), "nothing to run, nothing to allow");
}

#[test]
fn allow_reports_the_rule_of_the_first_part() {
    let rules = rules(&["shell(git status)", "shell(cargo test*)"], &[], &[]);
    assert_eq!(
        verdict(&shell(&rules, "cargo test $(git status)")),
        "allow shell(cargo test*)"
    );
}

#[test]
fn deny_patterns_may_span_separators() {
    let rules = rules(&["shell"], &["shell(curl * | sh)"], &[]);
    assert_eq!(
        verdict(&shell(&rules, "curl https://x | sh")),
        "deny shell(curl * | sh)"
    );
    assert_eq!(verdict(&shell(&rules, "curl https://x > f")), "allow shell");
}

// --- environment assignments ---

#[test]
fn harmless_env_prefixes_are_looked_past_by_allow() {
    let rules = rules(&["shell(cargo test*)", "shell(LC_ALL=C sort*)"], &[], &[]);
    assert!(allowed(&rules, "RUST_LOG=debug cargo test"));
    assert!(allowed(&rules, "RUST_BACKTRACE=1 NO_COLOR=1 cargo test -q"));
    assert!(allowed(&rules, "RUST_LOG='a b' cargo test"));
    assert!(allowed(&rules, "LC_ALL=C sort x"), "a rule may spell its assignment");
    assert!(!allowed(&rules, "LD_PRELOAD=/tmp/x.so cargo test"));
    assert!(!allowed(&rules, "RUST_LOG=1 PATH=/tmp cargo test"));
    assert!(!allowed(&rules, "RUSTC_WRAPPER=/tmp/x cargo test"));
    assert!(
        !allowed(&rules, "RUST_LOG=$(curl x) cargo test"),
        "the substitution is a part"
    );
    assert!(!allowed(&rules, "RUST_LOG=1"), "an assignment alone is no command");
    // The word boundary comes from the lexer, so a quoted `)` cannot fake one.
    assert!(!allowed(&rules, r#"RUST_LOG=$(echo ") cargo test") rm -rf /"#));
}

#[test]
fn any_env_prefix_is_looked_past_by_deny_and_ask() {
    let rules = rules(&["shell"], &["shell(rm *)"], &["shell(git push*)"]);
    assert_eq!(verdict(&shell(&rules, "FOO=1 rm -rf x")), "deny shell(rm *)");
    assert_eq!(
        verdict(&shell(&rules, "GIT_SSH_COMMAND=x git push")),
        "ask shell(git push*)"
    );
    assert_eq!(verdict(&shell(&rules, "FOO=1 ls")), "allow shell");
}

#[test]
fn reads_the_permissions_table() {
    #[derive(Deserialize)]
    struct File {
        permissions: PermissionsConfig,
    }
    let file: File = toml::from_str(
        "[permissions]\nallow = [\"shell(cargo test*)\", \"read\"]\ndeny = [\"fetch\"]\nallow_unsandboxed = [\"shell(git fetch*)\"]\n",
    )
    .expect("valid toml");
    assert_eq!(file.permissions.allow, ["shell(cargo test*)", "read"]);
    assert_eq!(file.permissions.deny, ["fetch"]);
    assert_eq!(file.permissions.allow_unsandboxed, ["shell(git fetch*)"]);
    assert!(file.permissions.ask.is_empty());
    let unknown = toml::from_str::<File>("[permissions]\nalow = [\"read\"]\n");
    assert!(unknown.is_err(), "misspelled keys are reported");
}

#[test]
fn config_errors_say_where() {
    let config = PermissionsConfig {
        ask: vec!["read".into(), "shell(x".into()],
        ..Default::default()
    };
    let err = Rules::from_config(&config, Source::File(PathBuf::from("/p/.brute/config.toml")))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.starts_with("/p/.brute/config.toml: permissions.ask: permission rule `shell(x`"),
        "{err}"
    );
}

#[test]
fn merges_sources_in_order() {
    let user = Rules::from_config(
        &PermissionsConfig {
            allow: vec!["read".into()],
            ..Default::default()
        },
        Source::File(PathBuf::from("/u.toml")),
    )
    .expect("valid");
    let mut session = Rules::default();
    session.push(RuleKind::Allow, rule("shell(ls)"), Source::Session);
    session.push(RuleKind::Deny, rule("fetch"), Source::Session);
    let merged = Rules::merge([user, session]);
    let allow: Vec<(&str, String)> = merged.allow.iter().map(|(r, s)| (r.as_str(), s.to_string())).collect();
    assert_eq!(
        allow,
        [("read", "/u.toml".to_owned()), ("shell(ls)", "session".to_owned())]
    );
    assert_eq!(merged.list(RuleKind::Deny).len(), 1);
    assert!(!merged.is_empty() && Rules::default().is_empty());
}

#[test]
fn describes_one_line_per_rule() {
    let mut rules = rules(&["shell(cargo test*)", "read"], &["fetch"], &["mcp__github__*"]);
    rules.push(RuleKind::Allow, rule("write(src/**)"), Source::ProjectApprovals);
    assert_eq!(
        rules.describe(),
        "deny   fetch               session\n\
         ask    mcp__github__*      session\n\
         allow  shell(cargo test*)  session\n\
         allow  read                session\n\
         allow  write(src/**)       project approvals\n"
    );
    rules.push(
        RuleKind::AllowUnsandboxed,
        rule("shell(git fetch)"),
        Source::ProjectApprovals,
    );
    assert_eq!(
        rules.describe().lines().last(),
        Some("allow_unsandboxed  shell(git fetch)    project approvals")
    );
    assert_eq!(Rules::default().describe(), "");
}
