"""Reading .npy and Matrix Market inputs; clear errors for anything else."""
import numpy as np
import pytest
import scipy.io
import scipy.sparse

from solvers.distributed.io import check_writable, read_matrix, write_matrix, write_results
from solvers.errors import InputError


@pytest.fixture
def rng():
    return np.random.default_rng()


def test_npy_roundtrip(tmp_path, rng):
    a = rng.standard_normal((7, 7))
    np.save(tmp_path / "a.npy", a)
    assert np.array_equal(read_matrix(str(tmp_path / "a.npy")), a)


def test_matrix_market_dense_symmetric_and_sparse(tmp_path, rng):
    a = rng.standard_normal((6, 6))
    a = a + a.T
    scipy.io.mmwrite(str(tmp_path / "dense.mtx"), a, symmetry="symmetric")
    np.testing.assert_allclose(read_matrix(str(tmp_path / "dense.mtx")), a, rtol=1e-14)
    s = scipy.sparse.random(9, 9, density=0.3, random_state=int(rng.integers(1 << 30)))
    s = s + s.T + scipy.sparse.eye(9)
    scipy.io.mmwrite(str(tmp_path / "sparse.mtx"), s)
    got = read_matrix(str(tmp_path / "sparse.mtx"))
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, s.toarray(), rtol=1e-14)


def test_bad_files_give_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_matrix(str(tmp_path / "missing.npy"))
    (tmp_path / "junk.mtx").write_text("this is not matrix market\n")
    with pytest.raises(InputError, match="cannot read"):
        read_matrix(str(tmp_path / "junk.mtx"))
    (tmp_path / "a.txt").write_text("1 2\n3 4\n")
    with pytest.raises(InputError, match="expected a .npy or Matrix Market"):
        read_matrix(str(tmp_path / "a.txt"))
    np.save(tmp_path / "vec.npy", np.arange(3.0))
    with pytest.raises(InputError, match="1-D"):
        read_matrix(str(tmp_path / "vec.npy"))
    np.save(tmp_path / "s.npy", np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(InputError, match="expected real or complex numbers"):
        read_matrix(str(tmp_path / "s.npy"))
    with pytest.raises(InputError, match="it is a directory"):
        read_matrix(str(tmp_path))
    (tmp_path / "text.npy").write_text("1 2\n3 4\n")
    with pytest.raises(InputError, match="not a .npy file") as err:
        read_matrix(str(tmp_path / "text.npy"))
    assert "pickle" not in str(err.value)


def test_complex_npy_and_hermitian_matrix_market(tmp_path, rng):
    x = rng.standard_normal((6, 6)) + 1j * rng.standard_normal((6, 6))
    np.save(tmp_path / "c.npy", x)
    assert np.array_equal(read_matrix(str(tmp_path / "c.npy")), x)
    h = x + x.conj().T
    write_matrix(str(tmp_path / "h.mtx"), h, symmetric=True)
    assert "hermitian" in (tmp_path / "h.mtx").read_text().splitlines()[0]
    np.testing.assert_allclose(read_matrix(str(tmp_path / "h.mtx")), h, rtol=1e-14)


def test_output_checks_and_the_name_numpy_writes(tmp_path, rng):
    assert check_writable(str(tmp_path / "r")) == str(tmp_path / "r.npz")
    assert write_results(str(tmp_path / "r"), np.ones(2, dtype=np.float32)) == str(tmp_path / "r.npz")
    assert np.load(tmp_path / "r.npz")["w"].dtype == np.float32
    with pytest.raises(InputError, match="no directory"):
        check_writable(str(tmp_path / "missing" / "r.npz"))
    (tmp_path / "d.npz").mkdir()
    with pytest.raises(InputError, match="it is a directory"):
        check_writable(str(tmp_path / "d.npz"))
    # A folder given as the output (numpy would write folder.npz beside it) is refused too.
    (tmp_path / "folder").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        check_writable(str(tmp_path / "folder"))
    assert not (tmp_path / "folder.npz").exists()


def test_output_check_tries_the_file_itself(tmp_path):
    """Permission bits say nothing to root, and some folders refuse new files to everyone
    (/proc): the check creates the file (and removes it again), keeping an existing one."""
    with pytest.raises(InputError, match="cannot write results to '/proc/r.npz'"):
        check_writable("/proc/r")
    (tmp_path / "kept.npz").write_bytes(b"old")
    assert check_writable(str(tmp_path / "kept.npz")) == str(tmp_path / "kept.npz")
    assert (tmp_path / "kept.npz").read_bytes() == b"old"
    check_writable(str(tmp_path / "new"))
    assert not (tmp_path / "new.npz").exists()


def test_write_results(tmp_path, rng):
    w, z = rng.standard_normal(4), rng.standard_normal((4, 4))
    write_results(str(tmp_path / "out.npz"), w, z, itype=2)
    data = np.load(tmp_path / "out.npz")
    assert np.array_equal(data["w"], w) and np.array_equal(data["z"], z) and int(data["itype"]) == 2


@pytest.mark.parametrize("name,symmetric", [("m.npy", False), ("m.mtx", False), ("s.mtx", True)])
def test_write_matrix_roundtrip(tmp_path, rng, name, symmetric):
    a = rng.standard_normal((5, 5))
    if symmetric:
        a = a + a.T
    write_matrix(str(tmp_path / name), a, symmetric=symmetric)
    np.testing.assert_allclose(read_matrix(str(tmp_path / name)), a, rtol=1e-15)
    with pytest.raises(InputError):
        write_matrix(str(tmp_path / "m.txt"), a)
