"""run_chunks reports progress through a callback (done, total), counting chunks already
finished; ProgressBar is such a callback drawing a tqdm bar."""

import numpy as np

from jaxaudit.runs import ProgressBar, RunDir, Sweep, run_chunks


def _compute(name):
    return {"x": np.full(3, int(name[-1]))}


def test_callback_sees_each_chunk_and_resumed_ones(tmp_path):
    names = [f"c{i}" for i in range(4)]
    run = RunDir.open(tmp_path / "r", kind="t", config={"a": 1})
    calls = []
    run_chunks(run, names[:2], _compute, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(0, 2), (1, 2), (2, 2)]
    calls.clear()
    out = run_chunks(run, names, _compute, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(2, 4), (3, 4), (4, 4)]   # two resumed from the folder
    assert [int(out[n]["x"][0]) for n in names] == [0, 1, 2, 3]


def test_worker_callback_counts_only_its_units(tmp_path):
    run = RunDir.open(tmp_path / "r", kind="t", config={"a": 1})
    calls = []
    run_chunks(run, [f"c{i}" for i in range(5)], _compute, sweep=Sweep(worker=(1, 2)),
               progress=lambda d, t: calls.append((d, t)))
    assert calls == [(0, 2), (1, 2), (2, 2)]


def test_progress_bar_callback_tracks_counts(tmp_path):
    run = RunDir.open(tmp_path / "r", kind="t", config={"a": 1})
    with ProgressBar("t") as bar:
        run_chunks(run, ["c0", "c1", "c2"], _compute, progress=bar)
        assert (bar._bar.n, bar._bar.total) == (3, 3)
    assert bar._bar is None


def test_without_a_run_folder_computes_in_memory():
    calls = []
    out = run_chunks(None, ["c0", "c1"], _compute, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(0, 2), (1, 2), (2, 2)]
    assert [int(out[n]["x"][0]) for n in ("c0", "c1")] == [0, 1]


def test_save_figure_writes_a_png_atomically(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxaudit.report.figures import save_figure

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    path = save_figure(fig, tmp_path / "f.png", dpi=50)
    plt.close(fig)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png"]  # no temporary left
