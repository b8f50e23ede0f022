from costlab.filenames import safe_file_name


def test_a_workload_key_becomes_the_directory_name_the_databases_are_committed_under():
    key = "conv2d_nchw(N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,padding=1,dtype=float32)"
    assert safe_file_name(key) == "conv2d_nchw_N=1,C=64,H=56,W=56,K=64,R=3,S=3,stride=1,padding=1,dtype=float32_"
    assert safe_file_name("a b/c:d") == "a_b_c_d"
