use super::*;

#[test]
fn every_visible_command_gets_a_man_page_that_names_its_options() {
    let dir = tempfile::tempdir().unwrap();
    let mut command = Cli::command();
    command.build();
    let mut written = Vec::new();
    write_pages(&command, "fsynclab", dir.path(), &mut written).unwrap();
    let visible: Vec<_> = command
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
        .collect();
    for sub in &visible {
        assert!(
            written.contains(&format!("fsynclab-{}", sub.get_name())),
            "no page for {}",
            sub.get_name()
        );
    }
    assert!(
        written.contains(&"fsynclab-store-copy".to_string()),
        "nested commands get pages too: {written:?}"
    );
    let run = fs::read_to_string(dir.path().join("fsynclab-run.1")).unwrap();
    assert!(run.contains(".TH fsynclab-run"), "{run}");
    assert!(run.contains("scratch"), "the page lists run's options: {run}");
}
