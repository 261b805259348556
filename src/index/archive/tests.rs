//! The archive's own tests: appends and generations, torn writes, lost or damaged `STATE`, damaged frames,
//! forgetting.

use super::frames::read_raw_frame;
use super::*;

fn file(path: &str, session: &str) -> ArchivedFile {
    ArchivedFile {
        path: path.into(),
        session_id: session.into(),
        project_dir: "/p".into(),
        role: FileRole::Main,
    }
}

#[test]
fn appends_only_new_bytes_and_starts_a_generation_on_rewrite() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    let a = file("/p/a.jsonl", "a");
    w.record(&a, 0, b"line one\n").unwrap();
    // The whole file again (a full re-read) adds only its tail; a resumed read past the tail adds the rest.
    w.record(&a, 0, b"line one\nline two\n").unwrap();
    w.record(&a, 9, b"line two\nline three\n").unwrap();
    w.commit().unwrap();
    let r = Archive::open(tmp.path()).unwrap();
    assert_eq!(
        r.read("/p/a.jsonl").unwrap().unwrap(),
        b"line one\nline two\nline three\n"
    );
    assert_eq!(r.state.files["/p/a.jsonl"].frames.len(), 3);
    // A rewritten file (different head) is a new generation.
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&a, 0, b"other\n").unwrap();
    w.commit().unwrap();
    let r = Archive::open(tmp.path()).unwrap();
    assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"other\n");
    assert_eq!(r.verify().unwrap(), 1);
}

#[test]
fn uncommitted_bytes_are_ignored_never_cut_and_damage_is_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let a = file("/p/a.jsonl", "a");
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&a, 0, b"kept\n").unwrap();
    w.commit().unwrap();
    // A writer killed before its commit: the frame is in the pack, not in STATE.
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&a, 5, b"lost\n").unwrap();
    drop(w);
    let r = Archive::open(tmp.path()).unwrap();
    assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"kept\n");
    // The next writer leaves the uncommitted bytes in place and appends to a new pack.
    let pack0 = fs_err::metadata(pack_path(&tmp.path().join(ARCHIVE_DIR), 0))
        .unwrap()
        .len();
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&a, 5, b"next\n").unwrap();
    w.commit().unwrap();
    let r = Archive::open(tmp.path()).unwrap();
    assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"kept\nnext\n");
    let dir = tmp.path().join(ARCHIVE_DIR);
    assert_eq!(fs_err::metadata(pack_path(&dir, 0)).unwrap().len(), pack0);
    // A flipped byte in a pack is reported, not returned.
    let pack = pack_path(&dir, 1);
    let mut bytes = fs_err::read(&pack).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs_err::write(&pack, bytes).unwrap();
    assert!(r.verify().is_err());
}

#[test]
fn a_damaged_state_is_rebuilt_from_the_packs() {
    let tmp = tempfile::tempdir().unwrap();
    let a = file("/p/a.jsonl", "a");
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&a, 0, b"one\n").unwrap();
    w.record(&a, 4, b"two\n").unwrap();
    w.record(&file("/p/b.jsonl", "b"), 0, b"bee\n").unwrap();
    w.commit().unwrap();
    let state = tmp.path().join(ARCHIVE_DIR).join(STATE);
    fs_err::write(&state, b"garbage").unwrap();
    assert!(Archive::open(tmp.path()).is_err());
    // The next writer rebuilds it; nothing is lost, and it appends on.
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&a, 8, b"three\n").unwrap();
    w.commit().unwrap();
    let r = Archive::open(tmp.path()).unwrap();
    assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"one\ntwo\nthree\n");
    assert_eq!(r.read("/p/b.jsonl").unwrap().unwrap(), b"bee\n");
    assert!(tmp.path().join(ARCHIVE_DIR).join("STATE.bad").exists());
}

#[test]
fn a_missing_state_is_rebuilt_from_the_packs_and_no_pack_is_truncated() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(ARCHIVE_DIR);
    let (a, b) = (file("/p/a.jsonl", "a"), file("/p/b.jsonl", "b"));
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&a, 0, b"only copy\n").unwrap();
    w.record(&b, 0, b"bee\n").unwrap();
    w.commit().unwrap();
    let pack0 = fs_err::read(pack_path(&dir, 0)).unwrap();
    fs_err::remove_file(dir.join(STATE)).unwrap();
    // A reader sees everything before any writer ran.
    let r = Archive::open(tmp.path()).unwrap();
    assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"only copy\n");
    // A writer appends on, and the pack it found is kept byte for byte.
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&b, 4, b"more\n").unwrap();
    w.commit().unwrap();
    assert!(
        fs_err::read(pack_path(&dir, 0))
            .unwrap()
            .starts_with(&pack0)
    );
    let r = Archive::open(tmp.path()).unwrap();
    assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"only copy\n");
    assert_eq!(r.read("/p/b.jsonl").unwrap().unwrap(), b"bee\nmore\n");
    assert!(dir.join(STATE).exists());
    // A state that does not know a pack (lost and recreated empty) never lets a writer overwrite it.
    fs_err::remove_file(dir.join(STATE)).unwrap();
    let mut next = 0;
    let (id, _) = create_pack(&dir, &mut next).unwrap();
    assert!(id > 0 && next == id + 1);
    assert!(
        fs_err::read(pack_path(&dir, 0))
            .unwrap()
            .starts_with(&pack0)
    );
}

#[test]
fn damaged_frames_cost_only_themselves() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(ARCHIVE_DIR);
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        let f = file(&format!("/p/{name}.jsonl"), name);
        w.record(&f, 0, format!("{name} {i}\n").as_bytes()).unwrap();
    }
    w.commit().unwrap();
    let r = Archive::open(tmp.path()).unwrap();
    let second = r.state.files["/p/b.jsonl"].frames[0].offset as usize;
    // The second frame claims 4 GiB of header and payload: refused before anything is allocated, and the
    // scan steps over it to the third.
    let pack = pack_path(&dir, 0);
    let mut bytes = fs_err::read(&pack).unwrap();
    bytes[second + 4..second + 12].copy_from_slice(&[0xff; 8]);
    fs_err::write(&pack, &bytes).unwrap();
    let mut f = File::open(&pack).unwrap();
    let err = read_raw_frame(&mut f, second as u64).unwrap_err();
    assert!(err.to_string().contains("past the end"), "{err}");
    fs_err::remove_file(dir.join(STATE)).unwrap();
    let r = Archive::open(tmp.path()).unwrap();
    assert_eq!(r.read("/p/a.jsonl").unwrap().unwrap(), b"a 0\n");
    assert!(r.read("/p/b.jsonl").unwrap().is_none());
    assert_eq!(r.read("/p/c.jsonl").unwrap().unwrap(), b"c 2\n");
}

#[test]
fn forgetting_rewrites_the_packs_without_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    let secret = "sk-ant-api03-SECRETSECRETSECRET";
    w.record(
        &file("/p/a.jsonl", "a"),
        0,
        format!("{secret}\n").as_bytes(),
    )
    .unwrap();
    w.record(&file("/p/b.jsonl", "b"), 0, b"keep me\n").unwrap();
    w.commit().unwrap();
    let reclaimed = w
        .forget_sessions(&HashSet::from(["a".to_string()]))
        .unwrap();
    assert!(reclaimed > 0);
    let r = Archive::open(tmp.path()).unwrap();
    assert!(r.read("/p/a.jsonl").unwrap().is_none());
    assert_eq!(r.read("/p/b.jsonl").unwrap().unwrap(), b"keep me\n");
    // No pack keeps the forgotten bytes, compressed or not.
    assert_no_archive_file_holds(tmp.path(), b"SECRET");
}

/// Asserts that no file of the archive under `index_dir` holds `needle`.
fn assert_no_archive_file_holds(index_dir: &Path, needle: &[u8]) {
    for e in fs_err::read_dir(index_dir.join(ARCHIVE_DIR))
        .unwrap()
        .flatten()
    {
        let bytes = fs_err::read(e.path()).unwrap();
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "{:?}",
            e.path()
        );
    }
}

#[test]
fn a_copy_scrubbed_by_older_rules_is_still_the_same_file_and_its_original_is_not_stored_again() {
    let tmp = tempfile::tempdir().unwrap();
    let a = file("/p/a.jsonl", "a");
    // Two values: one today's rules and older ones both take, one only today's take (it opens a line, where the
    // older rules saw no word boundary after the escape's `n`).
    let aws = "AKIA1234567890ABCDEF";
    let gh = format!("ghp_{}", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5");
    let line =
        serde_json::json!({"type":"user","message":{"content": format!("aws {aws} and\n{gh}")}})
            .to_string()
            + "\n";
    // The copy an older scrub left: the first value overwritten, the second as written.
    let mut all = line.clone().into_bytes();
    crate::secrets::redact_bytes_in_place(&mut all, &mut Default::default());
    let at = line.find(&gh).unwrap();
    let mut older = all.clone();
    older[at..at + gh.len()].copy_from_slice(gh.as_bytes());
    assert!(!String::from_utf8_lossy(&older).contains(aws));
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&a, 0, &older).unwrap();
    w.commit().unwrap();
    // Claude Code's file still holds both values, and grew by a line.
    let more = "{\"type\":\"user\",\"message\":{\"content\":\"next\"}}\n";
    let live = format!("{line}{more}");
    let mut w = ArchiveWriter::open(tmp.path()).unwrap();
    w.record(&a, 0, live.as_bytes()).unwrap();
    w.commit().unwrap();
    let r = Archive::open(tmp.path()).unwrap();
    let got = r.read("/p/a.jsonl").unwrap().unwrap();
    // The same generation, grown by the new line: not the original again.
    assert_eq!(got, [older.as_slice(), more.as_bytes()].concat());
    assert_eq!(r.state.files["/p/a.jsonl"].frames.len(), 2);
    assert_no_archive_file_holds(tmp.path(), aws.as_bytes());
}
