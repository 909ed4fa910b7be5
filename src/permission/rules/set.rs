//! The rules in force ([`Rules`]): read from a config file's `[permissions]` table, merged
//! across sources, and the [`Decision`] they make on a call (deny, then ask, then allow).

use serde::Deserialize;
use serde_json::Value;

use super::rule::{Rule, RuleError, RuleKind, Source, Syntax};
use super::subject::{Facts, RuleSubject, Subject};

/// The rule that decided a call, its list, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    pub kind: RuleKind,
    pub rule: Rule,
    pub source: Source,
}

/// What the rules say about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run without asking.
    Allow(Matched),
    /// Refuse.
    Deny(Matched),
    /// Ask the person. [`Rules::decide`] always names the rule; `None` is for callers that
    /// ask for another reason (a mode, an unreadable call).
    Ask(Option<Matched>),
    /// No rule applies: the sandbox mode decides.
    Default,
}

/// The `[permissions]` table of a config file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsConfig {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
    pub ask: Vec<String>,
    /// Allow rules that also cover calls running outside the sandbox.
    pub allow_unsandboxed: Vec<String>,
}

impl PermissionsConfig {
    /// The list of one kind.
    pub fn list_mut(&mut self, kind: RuleKind) -> &mut Vec<String> {
        match kind {
            RuleKind::Deny => &mut self.deny,
            RuleKind::Ask => &mut self.ask,
            RuleKind::Allow => &mut self.allow,
            RuleKind::AllowUnsandboxed => &mut self.allow_unsandboxed,
        }
    }
}

/// Every rule in force, with its source; deny beats ask beats allow whatever the source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    pub allow: Vec<(Rule, Source)>,
    pub deny: Vec<(Rule, Source)>,
    pub ask: Vec<(Rule, Source)>,
    pub allow_unsandboxed: Vec<(Rule, Source)>,
}

impl Rules {
    /// Parses one config file's lists; an error names the file, the list and the rule.
    pub fn from_config(config: &PermissionsConfig, source: Source) -> Result<Rules, RuleError> {
        let mut rules = Rules::default();
        for (kind, texts) in [
            (RuleKind::Allow, &config.allow),
            (RuleKind::Deny, &config.deny),
            (RuleKind::Ask, &config.ask),
            (RuleKind::AllowUnsandboxed, &config.allow_unsandboxed),
        ] {
            for text in texts {
                let rule = Rule::parse(text).map_err(|error| RuleError::InConfig {
                    origin: source.clone(),
                    kind,
                    error: Box::new(error),
                })?;
                rules.push(kind, rule, source.clone());
            }
        }
        Ok(rules)
    }

    /// Combines the rules of several sources (user config, project config, session…); order
    /// only affects which rule is named when several match.
    pub fn merge(sets: impl IntoIterator<Item = Rules>) -> Rules {
        let mut merged = Rules::default();
        for set in sets {
            merged.append(set);
        }
        merged
    }

    /// Adds another source's rules after these.
    pub fn append(&mut self, mut other: Rules) {
        self.allow.append(&mut other.allow);
        self.deny.append(&mut other.deny);
        self.ask.append(&mut other.ask);
        self.allow_unsandboxed.append(&mut other.allow_unsandboxed);
    }

    /// Adds one rule, e.g. a session approval.
    pub fn push(&mut self, kind: RuleKind, rule: Rule, source: Source) {
        self.list_mut(kind).push((rule, source));
    }

    /// The rules of one kind.
    pub fn list(&self, kind: RuleKind) -> &[(Rule, Source)] {
        match kind {
            RuleKind::Deny => &self.deny,
            RuleKind::Ask => &self.ask,
            RuleKind::Allow => &self.allow,
            RuleKind::AllowUnsandboxed => &self.allow_unsandboxed,
        }
    }

    fn list_mut(&mut self, kind: RuleKind) -> &mut Vec<(Rule, Source)> {
        match kind {
            RuleKind::Deny => &mut self.deny,
            RuleKind::Ask => &mut self.ask,
            RuleKind::Allow => &mut self.allow,
            RuleKind::AllowUnsandboxed => &mut self.allow_unsandboxed,
        }
    }

    /// Whether there are no rules at all.
    pub fn is_empty(&self) -> bool {
        RuleKind::ALL.iter().all(|&kind| self.list(kind).is_empty())
    }

    /// Decides a call from its arguments alone (a confined call, its path unresolved): see
    /// [`Rules::decide_call`].
    pub fn decide(&self, tool: &str, subject: RuleSubject, args: &Value) -> Decision {
        self.decide_call(tool, subject, args, &Facts::default())
    }

    /// Decides a call: deny, then ask, then allow, else [`Decision::Default`]. `subject` is
    /// what the tool says its rules match on; `args` the call's arguments object as the model
    /// sent it; `facts` what the caller found out about it (where its path leads, whether it
    /// would run unconfined).
    pub fn decide_call(&self, tool: &str, subject: RuleSubject, args: &Value, facts: &Facts) -> Decision {
        let syntax = subject.syntax();
        let subject = Subject::of(subject, args, facts);
        let restricting = |kind: RuleKind| {
            self.list(kind)
                .iter()
                .find(|(rule, _)| rule.matches_tool(tool) && rule.restricts(&subject, syntax))
                .map(|entry| matched(kind, entry))
        };
        if let Some(m) = restricting(RuleKind::Deny) {
            return Decision::Deny(m);
        }
        if let Some(m) = restricting(RuleKind::Ask) {
            return Decision::Ask(Some(m));
        }
        match self.allowing(tool, &subject, syntax, facts.unsandboxed) {
            Some(m) => Decision::Allow(m),
            None => Decision::Default,
        }
    }

    /// The allow rule covering the call (for a shell line: the one covering its first part,
    /// once every part is covered). An unsandboxed call is covered by `allow_unsandboxed`
    /// rules only; any other by either kind.
    fn allowing(&self, tool: &str, subject: &Subject, syntax: Syntax, unsandboxed: bool) -> Option<Matched> {
        let kinds: &[RuleKind] = if unsandboxed {
            &[RuleKind::AllowUnsandboxed]
        } else {
            &[RuleKind::Allow, RuleKind::AllowUnsandboxed]
        };
        let candidates: Vec<(RuleKind, &(Rule, Source))> = kinds
            .iter()
            .flat_map(|&kind| self.list(kind).iter().map(move |entry| (kind, entry)))
            .filter(|(_, (rule, _))| rule.matches_tool(tool))
            .collect();
        let pick = |(kind, entry): &(RuleKind, &(Rule, Source))| matched(*kind, entry);
        if let Some(candidate) = candidates.iter().find(|(_, (rule, _))| rule.pattern.is_none()) {
            return Some(pick(candidate));
        }
        let Subject::Shell { split, .. } = subject else {
            return candidates
                .iter()
                .find(|(_, (rule, _))| rule.allows(subject, syntax))
                .map(pick);
        };
        if !split.complete || split.parts.is_empty() {
            return None;
        }
        let mut first = None;
        for part in &split.parts {
            let candidate = candidates.iter().find(|(_, (rule, _))| rule.allows_part(part))?;
            first.get_or_insert_with(|| pick(candidate));
        }
        first
    }

    /// Fails on the first rule about `tool` whose pattern the tool's `subject` cannot read (a
    /// path tool's pattern that is no valid path glob): run for every tool of a session
    /// before it starts, so such a mistake is reported, as the rule's other mistakes are when
    /// its file is read.
    pub fn check_patterns(&self, tool: &str, subject: RuleSubject) -> Result<(), RuleError> {
        if subject.syntax() != Syntax::Path {
            return Ok(());
        }
        for kind in RuleKind::ALL {
            for (rule, source) in self.list(kind) {
                if let Some(message) = rule.path_pattern_error().filter(|_| rule.matches_tool(tool)) {
                    return Err(RuleError::InConfig {
                        origin: source.clone(),
                        kind,
                        error: Box::new(RuleError::Glob {
                            rule: rule.as_str().to_owned(),
                            message: format!("not a valid path pattern for `{tool}`: {message}"),
                        }),
                    });
                }
            }
        }
        Ok(())
    }

    /// One line per rule (kind, rule, source), deny first; empty when there are no rules.
    pub fn describe(&self) -> String {
        let lines: Vec<(RuleKind, &Rule, &Source)> = RuleKind::ALL
            .into_iter()
            .flat_map(|kind| self.list(kind).iter().map(move |(rule, source)| (kind, rule, source)))
            .collect();
        let width = lines
            .iter()
            .map(|(_, rule, _)| rule.as_str().chars().count())
            .max()
            .unwrap_or(0);
        let kind_width = lines
            .iter()
            .map(|(kind, _, _)| kind.as_str().len())
            .max()
            .unwrap_or(0)
            .max(5);
        lines
            .iter()
            .map(|(kind, rule, source)| format!("{kind:<kind_width$}  {:<width$}  {source}\n", rule.as_str()))
            .collect()
    }
}

fn matched(kind: RuleKind, (rule, source): &(Rule, Source)) -> Matched {
    Matched {
        kind,
        rule: rule.clone(),
        source: source.clone(),
    }
}
