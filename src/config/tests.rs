//! The configuration's unit tests: layers, trust, detection and `brute config`, through
//! `load` and `report` as the rest of brute calls them.

use super::layers::gather;
use super::settings::Gathered;
use super::*;
use std::collections::HashMap;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    move |k| map.get(k).cloned()
}

#[test]
fn layers_merge_in_order_with_sources() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    std::fs::write(
        &user,
        "provider = \"openai\"\nmodel = \"user-model\"\nmax_turns = 7\napi_key = \"k\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
    std::fs::write(dir.path().join(".brute/config.toml"), "model = \"project-model\"\n").unwrap();
    let env = env_of(&[("BRUTE_MAX_TURNS", "9")]);
    let flags = Flags {
        base_url: Some("http://127.0.0.1:9/v1".into()),
        ..Flags::default()
    };
    let s = load(dir.path(), &flags, &env, Some(&user)).unwrap();
    assert_eq!(s.provider.value, ProviderKind::OpenAi);
    assert_eq!(s.model.value, "project-model");
    assert_eq!(s.model.source, Source::File(dir.path().join(".brute/config.toml")));
    assert_eq!(s.max_turns.value, 9);
    assert_eq!(s.max_turns.source, Source::Env("BRUTE_MAX_TURNS".into()));
    assert_eq!(s.base_url.source, Source::Flag("--base-url".into()));
    let described = s.describe();
    assert!(described.contains("(set, 1 chars, hidden)"));
    let flags = Flags {
        model: Some("flag-model".into()),
        ..Flags::default()
    };
    assert_eq!(
        load(dir.path(), &flags, &env, Some(&user)).unwrap().model.value,
        "flag-model"
    );
}

/// `brute config`'s lines as (name, source) pairs.
fn described(settings: &Settings) -> Vec<(String, String)> {
    let text = settings.describe();
    let lines = text.split("\n\n").next().unwrap_or_default();
    lines
        .lines()
        .map(|line| {
            let name = line.split(' ').next().unwrap_or_default().to_owned();
            let source = line.rsplit_once(" # ").map(|(_, s)| s.to_owned()).unwrap_or_default();
            (name, source)
        })
        .collect()
}

/// One line (or table) of a config file per file key: a key without a sample here fails
/// the tests that walk every key.
const SAMPLES: &[(&str, &str)] = &[
    ("provider", "provider = \"openai\""),
    ("model", "model = \"m\""),
    ("base_url", "base_url = \"http://127.0.0.1:9/v1\""),
    ("api_key", "api_key = \"k\""),
    ("script", "script = \"demo.txt\""),
    ("allow_tools", "allow_tools = [\"read\"]"),
    ("max_turns", "max_turns = 3"),
    ("max_tokens", "max_tokens = 99"),
    ("stream", "stream = false"),
    ("max_attempts", "max_attempts = 2"),
    ("retry_base_ms", "retry_base_ms = 1"),
    ("connect_timeout_secs", "connect_timeout_secs = 1"),
    ("idle_timeout_secs", "idle_timeout_secs = 1"),
    ("system_prompt", "system_prompt = \"be brief\""),
    ("deny_tools", "deny_tools = [\"shell\"]"),
    ("max_tools", "max_tools = 5"),
    ("checkpoint_max_file_bytes", "checkpoint_max_file_bytes = 7"),
    ("checkpoint_max_entries", "checkpoint_max_entries = 9"),
    ("sandbox", "sandbox = \"read-only\""),
    ("writable_roots", "writable_roots = [\"/opt/cache\"]"),
    ("context_window", "context_window = 32000"),
    ("compact_at", "compact_at = 0.7"),
    ("web_search", "web_search = false"),
    ("web_search_url", "web_search_url = \"http://127.0.0.1:8888/search\""),
    ("compact_to", "compact_to = 0.4"),
    ("reasoning_effort", "reasoning_effort = \"high\""),
    ("text_tool_calls", "text_tool_calls = false"),
    ("notify", "notify = \"osc9\""),
    ("hyperlinks", "hyperlinks = \"on\""),
    // Tables come after the top-level keys.
    ("permissions", "[permissions]\nallow = [\"shell(cargo test*)\"]"),
    (
        "skill_sandbox",
        "[skill_sandbox]\nfs_read = [\".\"]\nfs_write = [\"out\"]\nnetwork = false\ntimeout = 30",
    ),
    (
        "models",
        "[models.\"m\"]\ncontext_window = 1000\ninput_price = 1.0\noutput_price = 2.0",
    ),
    (
        "tools",
        "[[tools]]\nname = \"lint\"\ndescription = \"Lint\"\ncommand = \"true\"",
    ),
    (
        "hooks",
        "[[hooks.pre_tool_use]]\nmatcher = \"shell\"\ncommand = \"check\"",
    ),
    (
        "mcp_servers",
        "[mcp_servers.srv]\ncommand = \"srv\"\nargs = [\"--stdio\"]",
    ),
];

/// Adding a key to `settings!` is enough for `brute config` to show it with its file:
/// a key without a sample here, or without a line there, fails this test.
#[test]
fn every_file_key_round_trips_through_describe() {
    let samples = SAMPLES;
    let mut keys: Vec<&str> = FileLayer::KEYS.to_vec();
    let mut sampled: Vec<&str> = samples.iter().map(|(key, _)| *key).collect();
    keys.sort_unstable();
    sampled.sort_unstable();
    assert_eq!(sampled, keys, "one sample per FileLayer key");

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
    // The user's own config (a project's needs trust for the risky keys; see
    // `an_untrusted_project_keeps_only_harmless_keys`).
    let file = dir.path().join(".brute/config.toml");
    let text: Vec<&str> = samples.iter().map(|(_, line)| *line).collect();
    std::fs::write(&file, text.join("\n")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let s = load(elsewhere.path(), &Flags::default(), &env_of(&[]), Some(&file)).unwrap();
    let lines = described(&s);
    let mut names: Vec<&str> = lines.iter().map(|(name, _)| name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names, keys, "describe() shows exactly the file keys");
    for (name, source) in &lines {
        assert_eq!(*source, file.display().to_string(), "{name}");
    }
    assert_eq!(s.script.unwrap().value, dir.path().join(".brute/demo.txt"));
    assert_eq!(s.command_tools[0].value.name, "lint");
}

#[test]
fn hosted_web_search_is_on_only_at_the_providers_own_api_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.toml");
    let run = |provider: &str, base_url: Option<&str>, config: &str| {
        std::fs::write(&user, config).unwrap();
        let flags = Flags {
            provider: Some(provider.into()),
            base_url: base_url.map(str::to_owned),
            ..Flags::default()
        };
        let env = env_of(&[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")]);
        let s = load(dir.path(), &flags, &env, Some(&user)).unwrap();
        (s.hosted_web_search(), s.web_search_endpoint().map(str::to_owned))
    };
    assert_eq!(run("anthropic", None, ""), (true, None));
    assert_eq!(run("responses", None, ""), (true, None));
    assert_eq!(
        run("openai", None, ""),
        (true, None),
        "brute speaks Responses to api.openai.com"
    );
    assert_eq!(
        run("ollama", None, "web_search = true\n"),
        (false, None),
        "Chat Completions hosts none"
    );
    assert_eq!(run("anthropic", Some("http://127.0.0.1:9"), ""), (false, None));
    assert_eq!(
        run("anthropic", Some("http://127.0.0.1:9"), "web_search = true\n"),
        (true, None)
    );
    assert_eq!(run("anthropic", None, "web_search = false\n"), (false, None));
    let searx = "web_search_url = \"http://127.0.0.1:8888/search\"\n";
    assert_eq!(
        run("anthropic", None, searx),
        (false, Some("http://127.0.0.1:8888/search".to_owned())),
        "the person's endpoint replaces the hosted search"
    );
    assert_eq!(
        run("openai", None, &format!("{searx}web_search = false\n")),
        (false, None)
    );
    std::fs::write(&user, "web_search_url = \"ftp://x\"\n").unwrap();
    assert!(
        load(
            dir.path(),
            &Flags::default(),
            &env_of(&[("OPENAI_API_KEY", "k")]),
            Some(&user)
        )
        .is_err()
    );
}

#[test]
fn an_untrusted_project_keeps_only_harmless_keys() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
    std::fs::write(
        dir.path().join(".brute/config.toml"),
        "base_url = \"http://127.0.0.1:9/v1\"\nsandbox = \"full-access\"\nmodel = \"m2\"\nmax_turns = 7\ncheckpoint_max_entries = 0\ncheckpoint_max_file_bytes = 99999999999\nweb_search_url = \"http://127.0.0.1:9/search\"\n[[tools]]\nname = \"x\"\ndescription = \"d\"\ncommand = \"true\"\n[models.\"m2\"]\ninput_price = 0.0\noutput_price = 0.0\n[mcp_servers.x]\ncommand = \"touch\"\n",
    )
    .unwrap();
    let env = env_of(&[("OPENAI_API_KEY", "k")]);
    let s = load(dir.path(), &Flags::default(), &env, None).unwrap();
    assert_eq!(
        s.untrusted_ignored,
        // The order of `FileLayer::RISKY`: layered keys, then tables, then plain keys.
        [
            "base_url",
            "tools",
            "models",
            "mcp_servers",
            "checkpoint_max_file_bytes",
            "checkpoint_max_entries",
            "sandbox",
            "web_search_url"
        ]
    );
    assert_eq!(
        (s.checkpoint_max_entries.value, s.checkpoint_max_file_bytes.value),
        (
            crate::session::checkpoint::DEFAULT_MAX_ENTRIES,
            crate::session::checkpoint::DEFAULT_MAX_FILE_BYTES
        ),
        "a cloned repo neither turns off nor blows up the undo of its turns"
    );
    assert!(s.mcp_servers.is_empty(), "a cloned repo starts no MCP server");
    assert!(s.models.is_empty(), "a cloned repo sets no prices");
    assert_eq!(
        s.base_url.value, "https://api.openai.com/v1",
        "the key never goes to the project's URL"
    );
    assert_eq!(s.sandbox_mode(), crate::sandbox::Mode::WorkspaceWrite);
    assert!(s.command_tools.is_empty());
    assert_eq!(
        (s.model.value.as_str(), s.max_turns.value),
        ("m2", 7),
        "harmless keys apply"
    );
    assert!(
        s.untrusted_notice(dir.path())
            .is_some_and(|n| n.contains("base_url, tools, models, mcp_servers, checkpoint_max_file_bytes"))
    );

    // It may narrow the tool list, never widen the user's.
    let user = dir.path().join("user.toml");
    std::fs::write(&user, "deny_tools = [\"shell\"]\nallow_tools = [\"read\", \"shell\"]\n").unwrap();
    std::fs::write(
        dir.path().join(".brute/config.toml"),
        "deny_tools = []\nallow_tools = [\"read\", \"write\"]\n",
    )
    .unwrap();
    let s = load(dir.path(), &Flags::default(), &env, Some(&user)).unwrap();
    assert_eq!(s.deny_tools.value, ["shell"], "the user's denial stands");
    assert_eq!(s.allow_tools.unwrap().value, ["read"], "only tools both allow");
}

/// Each key the settings list marks `risky`, set alone in an untrusted project's config, is
/// left out and named (in `untrusted_ignored`, the `-p` notice and `brute permissions`); every
/// other key applies from there. Driven by the generated `trust::RISKY_KEYS` and the samples,
/// so a new `risky` line is covered without touching this test.
#[test]
fn an_untrusted_project_sets_no_risky_key_and_every_harmless_one() {
    assert_eq!(trust::RISKY_KEYS, FileLayer::RISKY);
    for key in trust::RISKY_KEYS {
        assert!(FileLayer::KEYS.contains(key), "{key} is a file key");
    }
    let env = env_of(&[("OPENAI_API_KEY", "k")]);
    for (key, line) in SAMPLES {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
        let project = dir.path().join(".brute/config.toml");
        std::fs::write(&project, format!("{line}\n")).unwrap();
        let s = load(dir.path(), &Flags::default(), &env, None).unwrap();
        let from_project = described(&s)
            .iter()
            .any(|(name, source)| name == key && *source == project.display().to_string());
        if trust::RISKY_KEYS.contains(key) {
            assert_eq!(s.untrusted_ignored, [*key], "{key} is ignored and named");
            assert!(!from_project, "{key} does not apply from an untrusted project");
            assert!(
                s.untrusted_notice(dir.path())
                    .is_some_and(|notice| notice.contains(&format!("settings {key} in"))),
                "{key}"
            );
            let report = permissions_report(dir.path(), &Flags::default(), &env, None).unwrap();
            assert!(
                report.contains(&format!("brute trust applies them): {key}\n")),
                "{key}: {report}"
            );
        } else {
            assert!(
                s.untrusted_ignored.is_empty(),
                "{key} is harmless: {:?}",
                s.untrusted_ignored
            );
            assert!(from_project, "{key} applies in an untrusted project");
        }
    }
}

/// Hooks from the user's config and a trusted project run, the user's first; an untrusted
/// project's hooks are left out and named.
#[test]
fn project_hooks_need_trust() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
    std::fs::write(
        dir.path().join(".brute/config.toml"),
        "[[hooks.pre_tool_use]]\ncommand = \"project-hook\"\n",
    )
    .unwrap();
    let user = dir.path().join("user.toml");
    std::fs::write(&user, "[[hooks.stop]]\ncommand = \"user-hook\"\ntimeout = 3\n").unwrap();
    let env = env_of(&[("OPENAI_API_KEY", "k")]);
    let s = load(dir.path(), &Flags::default(), &env, Some(&user)).unwrap();
    let commands: Vec<&str> = s.hooks.iter().map(|h| h.value.spec.command.as_str()).collect();
    assert_eq!(commands, ["user-hook"], "an untrusted project's hook never runs");
    assert_eq!(s.untrusted_ignored, ["hooks"]);
    assert!(
        s.describe()
            .contains("hooks            = stop: user-hook (timeout 3 s)")
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[hooks.pre_tool]]\ncommand = \"x\"\n").unwrap();
    assert!(matches!(
        load(dir.path(), &Flags::default(), &env, Some(&bad)),
        Err(ConfigError::Parse { .. })
    ));
}

/// Each variable the environment layer reads is shown as the source of its key.
#[test]
fn every_env_variable_is_shown_as_a_source() {
    let samples: &[(&str, &str)] = &[
        ("BRUTE_PROVIDER", "openai"),
        ("BRUTE_MODEL", "m"),
        ("BRUTE_BASE_URL", "http://127.0.0.1:9/v1"),
        ("BRUTE_API_KEY", "k"),
        ("BRUTE_MAX_TURNS", "7"),
    ];
    let mut vars: Vec<&str> = Gathered::ENV_VARS.iter().map(|(var, _)| *var).collect();
    let mut sampled: Vec<&str> = samples.iter().map(|(var, _)| *var).collect();
    vars.sort_unstable();
    sampled.sort_unstable();
    assert_eq!(sampled, vars, "one sample per variable");
    let dir = tempfile::tempdir().unwrap();
    let s = load(dir.path(), &Flags::default(), &env_of(samples), None).unwrap();
    let sources: Vec<String> = described(&s).into_iter().map(|(_, source)| source).collect();
    for var in vars {
        assert!(sources.contains(&format!("env {var}")), "{var}");
    }
    let env = env_of(&[("BRUTE_PROVIDER", "replay"), ("BRUTE_MAX_TURNS", "many")]);
    let e = load(dir.path(), &Flags::default(), &env, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid value for BRUTE_MAX_TURNS: `many` is not a positive whole number"
    );
}

#[test]
fn detects_providers_from_environment() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_of(&[
        ("ANTHROPIC_API_KEY", "secret"),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:1"),
    ]);
    let s = load(dir.path(), &Flags::default(), &env, None).unwrap();
    assert_eq!(s.provider.value, ProviderKind::Anthropic);
    assert_eq!(s.base_url.value, "http://127.0.0.1:1");
    assert!(!s.describe().contains("secret"));
    let env = env_of(&[("OLLAMA_HOST", "127.0.0.1:5")]);
    let s = load(dir.path(), &Flags::default(), &env, None).unwrap();
    assert_eq!(s.provider.value, ProviderKind::Ollama);
    assert_eq!(s.base_url.value, "http://127.0.0.1:5/v1");
    let env = env_of(&[("BRUTE_NO_OLLAMA_PROBE", "1")]);
    assert!(matches!(
        load(dir.path(), &Flags::default(), &env, None),
        Err(ConfigError::NoProvider)
    ));
}

/// With only OPENAI_API_KEY: OpenAI's own API through Responses with the default model;
/// a compatible server at OPENAI_BASE_URL through Chat Completions.
#[test]
fn an_openai_key_alone_picks_the_responses_api() {
    use crate::provider::spec::WireFormat;
    let dir = tempfile::tempdir().unwrap();
    let wire = |s: &Settings| s.provider.value.spec().endpoint_for(&s.base_url.value).map(|e| e.wire);
    let s = load(dir.path(), &Flags::default(), &env_of(&[("OPENAI_API_KEY", "k")]), None).unwrap();
    assert_eq!(
        (s.provider.value, s.model.value.as_str()),
        (ProviderKind::OpenAi, "gpt-5.1")
    );
    assert_eq!(wire(&s), Some(WireFormat::Responses));
    let env = env_of(&[("OPENAI_API_KEY", "k"), ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")]);
    let s = load(dir.path(), &Flags::default(), &env, None).unwrap();
    assert_eq!(wire(&s), Some(WireFormat::OpenAiChat));
}

/// The generic key never travels to a provider detected from its own key variable.
#[test]
fn keys_go_only_with_their_own_provider() {
    let dir = tempfile::tempdir().unwrap();
    let key = |pairs: &[(&str, &str)], flags: &Flags| {
        let s = load(dir.path(), flags, &env_of(pairs), None).unwrap();
        let key = s.api_key.map(|k| (k.value, k.source.to_string()));
        (s.provider.value, key)
    };
    let both = [("ANTHROPIC_API_KEY", "anthropic-key"), ("BRUTE_API_KEY", "other-key")];
    assert_eq!(
        key(&both, &Flags::default()),
        (
            ProviderKind::Anthropic,
            Some(("anthropic-key".to_owned(), "env ANTHROPIC_API_KEY".to_owned()))
        )
    );
    let openai = [("OPENAI_API_KEY", "openai-key"), ("BRUTE_API_KEY", "other-key")];
    assert_eq!(
        key(&openai, &Flags::default()).1.map(|k| k.0).as_deref(),
        Some("openai-key")
    );
    // Named, the provider takes the generic key: the person said which server it is for.
    let named = Flags {
        provider: Some("anthropic".into()),
        ..Flags::default()
    };
    assert_eq!(key(&both, &named).1.map(|k| k.0).as_deref(), Some("other-key"));
    // A provider with no key variable of its own (Ollama behind a proxy) takes it.
    let ollama = [("OLLAMA_HOST", "127.0.0.1:5"), ("BRUTE_API_KEY", "proxy-key")];
    assert_eq!(
        key(&ollama, &Flags::default()).1.map(|k| k.0).as_deref(),
        Some("proxy-key")
    );
}

#[test]
fn a_config_that_is_not_utf8_is_refused_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, b"model = \"caf\xff\"\n").unwrap();
    let err = read_layer(&path).map(|_| ()).unwrap_err();
    assert!(matches!(err, ConfigError::NotUtf8 { offset: 12, .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!("{}: not valid UTF-8 at byte 12", path.display())
    );
    // A project's config too, trusted or not.
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(project.path().join(".brute")).unwrap();
    std::fs::write(project.path().join(".brute/config.toml"), b"\xc3(\n").unwrap();
    let err = gather(project.path(), &Flags::default(), &|_: &str| None, None)
        .map(|_| ())
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with(".brute/config.toml: not valid UTF-8 at byte 0"),
        "{err}"
    );
    // Valid multi-byte text still loads.
    std::fs::write(&path, "model = \"café\"\n").unwrap();
    assert!(read_layer(&path).unwrap().is_some());
}

#[test]
fn missing_key_and_bad_values_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_of(&[]);
    let flags = Flags {
        provider: Some("anthropic".into()),
        ..Flags::default()
    };
    assert!(matches!(
        load(dir.path(), &flags, &env, None),
        Err(ConfigError::MissingKey { .. })
    ));
    let flags = Flags {
        provider: Some("nope".into()),
        ..Flags::default()
    };
    assert!(matches!(
        load(dir.path(), &flags, &env, None),
        Err(ConfigError::UnknownProvider(_))
    ));
    std::fs::create_dir_all(dir.path().join(".brute")).unwrap();
    std::fs::write(dir.path().join(".brute/config.toml"), "max_tools = 0\n").unwrap();
    let e = load(
        dir.path(),
        &Flags::default(),
        &env_of(&[("BRUTE_PROVIDER", "replay")]),
        None,
    )
    .unwrap_err();
    assert_eq!(e.to_string(), "invalid value for max_tools: must be at least 1");
    std::fs::write(dir.path().join(".brute/config.toml"), "reasoning_effort = \"max\"\n").unwrap();
    let e = load(
        dir.path(),
        &Flags::default(),
        &env_of(&[("BRUTE_PROVIDER", "replay")]),
        None,
    )
    .unwrap_err();
    // A choice is read at load: the error names the file, the key and every allowed name.
    let project = dir.path().join(".brute/config.toml");
    assert!(matches!(&e, ConfigError::Parse { path, .. } if *path == project), "{e}");
    let text = e.to_string();
    assert!(
        text.contains(&project.display().to_string())
            && text.contains("reasoning_effort = \"max\"")
            && text.contains("`max` must be low, medium or high"),
        "{text}"
    );
    for (line, allowed) in [
        (
            "sandbox = \"all\"",
            "`all` must be read-only, workspace-write or full-access",
        ),
        ("notify = \"beep\"", "`beep` must be bel, osc9 or off"),
        ("hyperlinks = \"yes\"", "`yes` must be auto, on or off"),
    ] {
        std::fs::write(&project, format!("{line}\n")).unwrap();
        let e = load(
            dir.path(),
            &Flags::default(),
            &env_of(&[("BRUTE_PROVIDER", "replay")]),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains(allowed), "{e}");
    }
    // The spellings brute always took still load.
    // (In the user's config: a project's `sandbox` needs trust.)
    std::fs::write(&project, "").unwrap();
    let user = dir.path().join("user.toml");
    std::fs::write(&user, "reasoning_effort = \"High\"\nsandbox = \"read-only\"\n").unwrap();
    let s = load(
        dir.path(),
        &Flags::default(),
        &env_of(&[("BRUTE_PROVIDER", "replay")]),
        Some(&user),
    )
    .unwrap();
    assert_eq!(s.reasoning_effort(), Some(crate::provider::Effort::High));
    assert_eq!(s.sandbox_mode(), crate::sandbox::Mode::ReadOnly);
    // A flag with a name clap would refuse is refused here too.
    let wrong = Flags {
        provider: Some("replay".into()),
        sandbox: Some("all".into()),
        ..Flags::default()
    };
    assert_eq!(
        load(dir.path(), &wrong, &env_of(&[]), None).unwrap_err().to_string(),
        "invalid value for --sandbox: `all` must be read-only, workspace-write or full-access"
    );
    std::fs::write(dir.path().join(".brute/config.toml"), "bogus = 1\n").unwrap();
    assert!(matches!(
        load(dir.path(), &flags, &env, None),
        Err(ConfigError::Parse { .. })
    ));
}
