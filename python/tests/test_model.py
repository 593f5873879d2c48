"""test_model.py - tdsl.load and calls on numpy arrays, against numpy's
float64 computation of the same models (python/tests/models.td) from
their state_dict."""
import ctypes
import os
import shutil
import threading

import numpy as np
import pytest

import tdsl
import safetensors_io   # tests/safetensors_io.py


def reference(sd, x):
    """Tiny.forward in float64: fc2(relu(fc1(x))) with torch.nn.Linear's
    y = x @ W.T + b."""
    f = {k: v.astype(np.float64) for k, v in sd.items()}
    h = np.maximum(x.astype(np.float64) @ f["fc1.weight"].T + f["fc1.bias"], 0.0)
    return h @ f["fc2.weight"].T + f["fc2.bias"]


def rows(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, 4)).astype(np.float32)


def spy_calls(m, monkeypatch):
    """The pointers of every call m makes from now on: one list per call,
    its inputs' then its outputs'."""
    seen, real = [], m._call

    def spy(handle, entry, sizes, ptrs):
        seen.append([ptrs[i] for i in range(len(ptrs))])
        return real(handle, entry, sizes, ptrs)

    monkeypatch.setattr(m, "_call", spy)
    return seen


# ---- what the artifact says about itself ----

def test_the_artifact_describes_its_entries_and_parameters(model):
    assert model.entries == ("Tiny.forward", "Tiny.predict", "Tiny.pair", "scale64", "twice16", "count", "shout")
    f = model.forward
    assert f.name == "Tiny.forward" and f.sizes == ("N",)
    assert f.inputs[0]["name"] == "x" and f.inputs[0]["dtype"] == "f32" and f.inputs[0]["shape"] == ["N", 4]
    assert f.signature == "Tiny.forward(x: f32[N, 4]) -> (f32[N, 3])"
    assert model.pair.outputs[0]["shape"] == ["2*N", 4]
    assert model.count.outputs[0]["shape"] == []
    # PyTorch's names, as torch.nn.Linear's state_dict has them
    assert model.parameters == {"fc1.weight": ("f32", (8, 4)), "fc1.bias": ("f32", (8,)),
                                "fc2.weight": ("f32", (3, 8)), "fc2.bias": ("f32", (3,))}
    assert list(model.state_dict()) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]


# ---- calls ----

def test_forward_matches_numpy_float64_for_batches_of_1_and_5(model):
    sd = model.state_dict()
    for n in (1, 5, 1):   # one artifact serves every N, and back again
        x = rows(n, seed=n)
        y = model.forward(x)
        assert y.dtype == np.float32 and y.shape == (n, 3)
        np.testing.assert_allclose(y, reference(sd, x), rtol=1e-5, atol=1e-5)
    assert np.array_equal(model.call("Tiny.forward", rows(2)), model.call("forward", x=rows(2)))


def test_two_outputs_come_back_as_a_tuple(model):
    x = rows(6)
    scores, best = model.predict(x)
    ref = reference(model.state_dict(), x)
    np.testing.assert_allclose(scores, ref, rtol=1e-5, atol=1e-5)
    assert best.dtype == np.int64 and np.array_equal(best, np.argmax(ref, axis=-1))


def test_sizes_are_bound_across_arguments_and_polynomial_shapes_allocated(model):
    a, b = rows(3, 1), rows(3, 2)
    y = model.pair(a, b)
    assert y.shape == (6, 4) and np.array_equal(y, np.concatenate([a, b]))
    with pytest.raises(tdsl.Error) as e:
        model.pair(a, rows(2))
    assert str(e.value) == ("Tiny.pair: argument 'b': expected f32[N, 4], got f32[2, 4]: dimension 0 is 2, "
                            "expected N = 3 (from argument 'a', dimension 0)")


def test_other_dtypes(model):
    x = np.arange(6, dtype=np.float64).reshape(2, 3) / 7
    assert np.array_equal(model.scale64(x), x * 2)
    h = np.array([0.5, -1.25, 3.0], dtype=np.float16)
    assert model.twice16(h).dtype == np.float16 and np.array_equal(model.twice16(h), h + h)
    got = model.count(np.array([1, 2, 3, 4], dtype=np.int64), np.array([True, False, True, True]))
    assert got.shape == () and got.dtype == np.int64 and int(got) == 8
    # Python numbers and lists take the argument's dtype (ints into floats too)
    assert int(model.count([1, 2, 3], [True, True, False])) == 3
    assert np.array_equal(model.scale64([[1, 2]]), np.array([[2.0, 4.0]]))


def test_print_goes_to_sys_stdout(model, capsys):
    y = model.shout(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    assert np.array_equal(y, [2.0, 3.0, 4.0])
    assert capsys.readouterr().out.split() == ["total", "6.0000"]


# ---- messages ----

@pytest.mark.parametrize("x, message", [
    (np.zeros((3, 4), np.float64),
     "Tiny.forward: argument 'x': expected f32[N, 4], got f64[3, 4]: dtype is f64, expected f32"),
    (np.zeros((3, 5), np.float32),
     "Tiny.forward: argument 'x': expected f32[N, 4], got f32[3, 5]: dimension 1 is 5, expected 4"),
    (np.zeros(4, np.float32),
     "Tiny.forward: argument 'x': expected f32[N, 4], got f32[4]: rank is 1, expected 2"),
    (np.zeros((3, 4), np.uint8),
     "Tiny.forward: argument 'x': expected f32[N, 4], got uint8[3, 4]: numpy's uint8 is no tdsl dtype"),
    ("four", "Tiny.forward: argument 'x': expected f32[N, 4], got a str"),
])
def test_wrong_arguments_are_refused_with_tdsls_messages(model, x, message):
    with pytest.raises(tdsl.Error) as e:
        model.forward(x)
    assert str(e.value) == message


def test_wrong_argument_lists(model):
    x = rows(2)
    cases = [
        (lambda: model.forward(), "Tiny.forward: argument 'x' (f32[N, 4]) is missing"),
        (lambda: model.forward(x, x), "Tiny.forward takes 1 argument (x), got 2"),
        (lambda: model.forward(y=x), "Tiny.forward has no argument 'y' (its arguments: x)"),
        (lambda: model.forward(x, x=x), "Tiny.forward: argument 'x' is given twice"),
        (lambda: model.count([1.5, 2.0], [True, True]),
         "count: argument 'x': expected i64[K], got a list of f64[2], whose values do not all fit i64"),
        (lambda: model.call("backward", x),
         f"{model.path} has no entry point 'backward' (it has {', '.join(model.entries)})"),
    ]
    for f, message in cases:
        with pytest.raises(tdsl.Error) as e:
            f()
        assert str(e.value) == message
    with pytest.raises(AttributeError):
        model.backward


# ---- no copies ----

def test_contiguous_inputs_and_outputs_are_passed_without_copies(model, monkeypatch):
    seen = spy_calls(model, monkeypatch)
    x = rows(4)
    y = model.forward(x)
    assert seen[-1] == [x.ctypes.data, y.ctypes.data]   # x's own memory in, y's written in place
    # a strided view is copied first (and still computed right)
    wide = rows(8)[::2]
    assert not wide.flags.c_contiguous
    np.testing.assert_allclose(model.forward(wide), reference(model.state_dict(), wide), rtol=1e-5, atol=1e-5)
    assert seen[-1][0] != wide.ctypes.data


def test_out_writes_into_the_callers_arrays(model):
    x = rows(3)
    buf = np.full((3, 3), np.nan, np.float32)
    assert model.forward(x, out=buf) is buf
    np.testing.assert_allclose(buf, reference(model.state_dict(), x), rtol=1e-5, atol=1e-5)
    s, b = np.empty((3, 3), np.float32), np.empty(3, np.int64)
    got = model.predict(x, out=(s, b))
    assert got[0] is s and got[1] is b
    with pytest.raises(tdsl.Error) as e:
        model.forward(x, out=np.empty((2, 3), np.float32))
    assert str(e.value) == "Tiny.forward: out: expected f32[3, 3] (f32[N, 3] for these sizes), got f32[2, 3]"


# ---- parameters ----

def new_weights(model, seed):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(s).astype(np.float32) for k, (_, s) in model.parameters.items()}


def test_load_weights_round_trip(model, tmp_path):
    w = new_weights(model, 42)
    path = str(tmp_path / "w.safetensors")
    safetensors_io.save(path, w)
    model.load_weights(path)
    sd = model.state_dict()
    for k in w:
        assert np.array_equal(sd[k], w[k]), k
    x = rows(5)
    np.testing.assert_allclose(model.forward(x), reference(w, x), rtol=1e-5, atol=1e-5)
    # a file that does not fit changes nothing, and says why
    bad = dict(w)
    bad["fc1.bias"] = np.zeros(7, np.float32)
    del bad["fc2.bias"]
    safetensors_io.save(path, bad)
    with pytest.raises(tdsl.Error) as e:
        model.load_weights(path)
    assert str(e.value).splitlines()[1:] == ["weight 'fc1.bias' is f32[7], expected f32[8]",
                                             "missing weight 'fc2.bias' (f32[3])"]
    assert np.array_equal(model.state_dict()["fc1.bias"], w["fc1.bias"])
    with pytest.raises(tdsl.Error, match="no-such.safetensors"):
        model.load_weights(str(tmp_path / "no-such.safetensors"))


def test_state_dict_is_a_copy_and_load_state_dict_sets_it(model):
    sd = model.state_dict()
    before = sd["fc1.weight"].copy()
    sd["fc1.weight"][:] = 0
    assert np.array_equal(model.state_dict()["fc1.weight"], before)
    w = new_weights(model, 7)
    model.load_state_dict(w)
    x = rows(2)
    np.testing.assert_allclose(model.forward(x), reference(w, x), rtol=1e-5, atol=1e-5)
    bad = dict(w, extra=np.zeros(1, np.float32))
    bad["fc2.weight"] = bad["fc2.weight"].astype(np.float64)
    with pytest.raises(tdsl.Error) as e:
        model.load_state_dict(bad)
    assert str(e.value).splitlines()[1:] == ["weight 'fc2.weight' has dtype f64, expected f32 (f32[3, 8])",
                                             "unexpected weight 'extra': the model has no parameter of that name"]


def test_models_of_one_library_are_independent(built):
    a, b = tdsl.load(built), tdsl.load(built)
    w = new_weights(a, 3)
    a.load_state_dict(w)
    assert not np.array_equal(b.state_dict()["fc1.weight"], w["fc1.weight"])
    x = rows(2)
    np.testing.assert_allclose(a.forward(x), reference(w, x), rtol=1e-5, atol=1e-5)


def test_calls_from_threads_take_turns(model):
    sd, out, errors = model.state_dict(), {}, []

    def run(i):
        try:
            for _ in range(50):
                x = rows(1 + i % 4, seed=i)
                out[i] = (x, model.forward(x))
        except Exception as e:   # reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for x, y in out.values():
        np.testing.assert_allclose(y, reference(sd, x), rtol=1e-5, atol=1e-5)


# ---- what is not an artifact ----

def test_files_that_are_not_artifacts(tmp_path, built, monkeypatch):
    with pytest.raises(tdsl.Error, match="no such file"):
        tdsl.load(str(tmp_path / "missing.so"))
    text = tmp_path / "text.so"
    text.write_text("not a library\n")
    with pytest.raises(tdsl.Error, match="is not a shared library this process can load"):
        tdsl.load(str(text))
    other = np.core._multiarray_umath.__file__   # a shared library, not tdsl's
    with pytest.raises(tdsl.Error) as e:
        tdsl.load(other)
    assert "is not a tdsl CPU artifact" in str(e.value)
    with pytest.raises(tdsl.Error, match="is a directory"):
        tdsl.load(str(tmp_path))
    monkeypatch.setattr(tdsl._model, "ABI", tdsl.ABI + 1)
    with pytest.raises(tdsl.Error) as e:
        tdsl.load(built)
    assert f"is a tdsl artifact of ABI {tdsl.ABI}, this package reads ABI {tdsl.ABI + 1}" in str(e.value)


def test_a_renamed_artifact_is_found_by_its_symbols(built, tmp_path):
    copy = str(tmp_path / "renamed.so")
    shutil.copy(built, copy)
    m = tdsl.load(copy)
    assert m.prefix == "models" and m.entries[0] == "Tiny.forward"
    assert m.forward(rows(1)).shape == (1, 3)


def test_a_library_rebuilt_after_loading_is_refused(built, tmp_path):
    path = str(tmp_path / "models.so")
    shutil.copy(built, path)
    tdsl.load(path)
    os.utime(path, ns=(1, 1))   # as a rebuild would leave it: another file under the name
    with pytest.raises(tdsl.Error, match="changed since this process loaded it"):
        tdsl.load(path)


def test_a_closed_model_refuses_calls(built):
    m = tdsl.load(built)
    m.close()
    with pytest.raises(tdsl.Error, match="was closed"):
        m.forward(rows(1))
    m.close()   # twice is fine


def test_errors_from_the_c_api_do_not_crash(model):
    # what the package never passes, the runtime still refuses with a message
    I, L = ctypes.c_int, ctypes.c_int64
    rc = model._bind(model._m, 99, (I * 1)(3), (I * 1)(2), (L * 2)(1, 4), (L * 1)(), (L * 2)())
    assert rc != 0 and model._message() == "no entry point 99"
    rc = model._bind(model._m, 0, (I * 1)(42), (I * 1)(2), (L * 2)(1, 4), (L * 1)(), (L * 2)())
    assert model._message() == "Tiny.forward: argument 'x': dtype code 42 is not a tdsl dtype"
    rc = model._get_param(model._m, 0, None, 3)
    assert rc != 0 and model._message() == "parameter 'fc1.weight' has 128 bytes, not 3"
