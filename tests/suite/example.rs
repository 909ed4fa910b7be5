//! The `custom_tool` example runs end to end against the replay provider.

#[path = "../../examples/custom_tool.rs"]
mod custom_tool;

#[tokio::test]
async fn the_custom_tool_example_runs() {
    let transcript = custom_tool::run(custom_tool::replay(), "replay").await.unwrap();
    assert_eq!(
        transcript,
        "[count_vowels → 5]\nThere are 5 vowels in \"a coding agent\"."
    );
}
