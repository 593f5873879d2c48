"""test_step.py - a training step of a built artifact from Python:
m.step(x, y) returns the loss and updates the model's parameters and
optimizer state in place (step.td), against values worked out by hand and
numpy float64."""
import os
import subprocess

import numpy as np
import pytest

import tdsl

HERE = os.path.dirname(os.path.abspath(__file__))
X = np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32)
Y = np.array([0, 1], dtype=np.int64)


@pytest.fixture(scope="module")
def built_step(tool, tmp_path_factory):
    out = tmp_path_factory.mktemp("step")
    r = subprocess.run([tool, "build", os.path.join(HERE, "step.td"), "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return str(out / "step.so")


@pytest.fixture
def m(built_step):
    with tdsl.load(built_step) as model:
        yield model


def numpy_steps(n):
    """n steps in float64: softmax cross-entropy, PyTorch's SGD with
    momentum 0.9 and lr 0.5 (the first step's buffer is the gradient)."""
    x, y = X.astype(np.float64), Y
    w, buf, out = np.zeros((2, 2)), None, []
    for _ in range(n):
        z = x @ w.T
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        loss = -np.mean(np.log(p[np.arange(2), y]))
        g = ((p - np.eye(2)[y]) / 2).T @ x
        buf = g if buf is None else 0.9 * buf + g
        w = w - 0.5 * buf
        out.append((loss, w.copy(), buf.copy()))
    return out


def test_the_description_marks_the_step_as_updating_state(m):
    step = m.entry("Train.step")
    assert set(step.updates) == {"net.w", "net.w.momentum_buffer", "opt.num_steps"}
    assert m.entry("Train.forward").updates == ()
    assert step.signature == "Train.step(x: f32[B, 2], y: i64[B]) -> (f32[])"


def test_one_step_by_hand(m):
    loss = m.step(X, Y)
    # w = 0: the logits are 0 and the loss log 2; d loss / d logits =
    # (softmax - one_hot) / 2 = [[-1/4, 1/4], [1/4, -1/4]], and
    # d loss / d w = that^T @ x = [[-1/4, 1/2], [1/4, -1/2]]
    g = np.array([[-0.25, 0.5], [0.25, -0.5]])
    assert loss.shape == () and loss.dtype == np.float32
    assert abs(float(loss) - np.log(2)) < 1e-6
    s = m.state_dict()
    np.testing.assert_allclose(s["net.w.momentum_buffer"], g, atol=1e-7)
    np.testing.assert_allclose(s["net.w"], -0.5 * g, atol=1e-7)
    assert float(s["opt.num_steps"]) == 1
    # the other entry point sees the new weights
    np.testing.assert_allclose(m.forward(X), X @ (-0.5 * g).T, atol=1e-7)


def test_steps_match_numpy_float64(m):
    for k, (loss, w, buf) in enumerate(numpy_steps(4)):
        assert abs(float(m.step(X, Y)) - loss) < 1e-5 * loss, k
        s = m.state_dict()
        np.testing.assert_allclose(s["net.w"], w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s["net.w.momentum_buffer"], buf, rtol=1e-5, atol=1e-6)
        assert float(s["opt.num_steps"]) == k + 1


def test_load_state_dict_restarts_training(m):
    start = m.state_dict()
    first = float(m.step(X, Y))
    m.step(X, Y)
    m.load_state_dict(start)
    assert float(m.step(X, Y)) == first
    np.testing.assert_allclose(m.state_dict()["net.w"], numpy_steps(1)[0][1], atol=1e-7)


def test_a_bad_batch_changes_nothing(m):
    before = m.state_dict()
    with pytest.raises(tdsl.Error, match="Train.step: argument 'y'"):
        m.step(X, np.array([0, 1, 1], dtype=np.int64))
    after = m.state_dict()
    assert all(np.array_equal(before[k], after[k]) for k in before)
