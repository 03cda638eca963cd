//! A run beside CPU-burning processes says the machine was busy, with figures, on the
//! console, in `report.md`, in `report.json` and in `measured show`.

use crate::common::{bin, run, text, write};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Processes that keep every core busy until dropped (killed and reaped, also when the test
/// fails). Niced, so tests running beside this one still get the CPU when they want it: the
/// run counts CPU time other processes use, and these use all the time nobody else wants.
struct Burners(Vec<Child>);

impl Burners {
    fn start(n: usize) -> Burners {
        let spin = "while :; do :; done";
        let one = || {
            Command::new("nice")
                .args(["-n", "19", "sh", "-c", spin])
                .stdout(Stdio::null())
                .spawn()
                .or_else(|_| Command::new("sh").args(["-c", spin]).stdout(Stdio::null()).spawn())
                .expect("start a CPU burner")
        };
        Burners((0..n).map(|_| one()).collect())
    }
}

impl Drop for Burners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

const SLEEPY: &str = r#"
[experiment]
name = "beside-burners"
[schedule]
warmup = 0
repetitions = 6
seed = 3
[stages.work]
kind = "command"
argv = ["sleep", "0.3"]
"#;

fn report_json(stdout: &str) -> serde_json::Value {
    let md = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .expect("report path printed");
    serde_json::from_str(&std::fs::read_to_string(Path::new(md).with_file_name("report.json")).unwrap()).unwrap()
}

#[cfg(target_os = "linux")]
#[test]
fn a_run_beside_cpu_burners_warns_of_a_busy_machine() {
    let dir = tempfile::tempdir().unwrap();
    let m = write(dir.path(), "b.toml", SLEEPY);
    let db = dir.path().join("r.sqlite");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let out = {
        let _burners = Burners::start(cores + 1);
        run(bin()
            .arg("--database")
            .arg(&db)
            .args(["run", "--results-dir"])
            .arg(dir.path())
            .arg(&m))
    };
    let console = text(&out);
    assert_eq!(out.status.code(), Some(0), "{console}");
    assert!(
        console.contains("warning: Busy machine: other processes used "),
        "{console}"
    );

    let json = report_json(&String::from_utf8_lossy(&out.stdout));
    let load = &json["load"];
    assert_eq!(load["busy"], true, "{load}");
    assert_eq!(load["cores"].as_u64(), Some(cores as u64), "{load}");
    assert_eq!(load["trials"], 6, "{load}");
    let other = load["other_cpu_mean"].as_f64().unwrap();
    assert!(other > cores as f64 / 2.0, "{load}");
    assert!(
        load["mean"].as_f64().unwrap() >= 0.0 && load["max"].as_f64().is_some(),
        "{load}"
    );
    let note = json["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .find(|n| n.starts_with("Busy machine:"))
        .unwrap_or_else(|| panic!("no busy note: {}", json["notes"]));
    assert!(
        note.contains(&format!("of the {cores} core")) && note.contains("the 1-minute load averaged"),
        "{note}"
    );
    let md_path = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("report: ").map(str::to_owned))
        .unwrap();
    let md = std::fs::read_to_string(md_path).unwrap();
    assert!(md.contains("> **Note:** Busy machine: other processes used"), "{md}");

    let show = run(bin().arg("--database").arg(&db).args(["show", "latest"]));
    assert!(text(&show).contains("warning: Busy machine:"), "{}", text(&show));
}
