from costlab.filenames import safe_file_name


def test_a_workload_key_becomes_the_directory_name_the_databases_are_committed_under():
    key = "conv2d_nchw(N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,padding=1,dtype=float32)"
    assert safe_file_name(key) == "conv2d_nchw_N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,padding=1,dtype=float32_"
    assert safe_file_name("a b/c:d") == "a_b_c_d"


def test_a_label_too_long_for_a_file_name_is_cut_and_told_apart_by_a_digest(tmp_path):
    base = "myop(" + ",".join(f"p{i}={i}" for i in range(80))  # 500 characters
    first, second = safe_file_name(base + ")"), safe_file_name(base + ",extra=1)")
    assert first != second and first[:200] == second[:200]
    assert safe_file_name(base[:243]) == base[:243].replace("(", "_")  # up to the cap, as before
    for name in (first, second):
        assert len(name.encode()) <= 243
        (tmp_path / name / "lgbm" / "seed0").mkdir(parents=True)  # a session directory
        (tmp_path / f"{name}.seconds.png").write_bytes(b"")  # compare's plot beside it
    assert safe_file_name(base + ")") == first  # the same label, the same name, every time


def test_a_long_label_of_non_ascii_letters_is_cut_between_characters(tmp_path):
    name = safe_file_name("é" * 300)
    assert len(name.encode()) <= 243 and name.startswith("é" * 100)
    (tmp_path / name).mkdir()


def test_a_label_that_is_a_directory_reference_becomes_a_plain_name():
    assert (safe_file_name("."), safe_file_name(".."), safe_file_name("...")) == ("_", "__", "...")
