import json

import pytest

from glmbench.predict import costmodel as cm
from glmbench.predict import hardware as hw
from glmbench.results import records
from glmbench.predict import sweep

SETUPS = [dict(rig="rtx-3090"), dict(rig=hw.study_rig(), split="layer")]
DEPTHS = [1024, 8192, 65536]


def test_predict_records_are_tidy_and_complete():
    recs = sweep.predict(["glm-4.7-flash", "qwen3-32b"], SETUPS, DEPTHS)
    assert len(recs) == 2 * 2 * 3 * 3
    for r in recs:
        records.validate(r)
        assert r["evidence"] == "predicted" and r["runtime"] == "typical" and r["hardware"] == "rtx-3090"
        for k in ("model", "model_type", "device", "n_cards", "split", "weights", "type_k", "type_v",
                  "mla_strategy", "n_depth", "n_prompt", "n_gen", "n_streams", "test"):
            assert k in r
    tg = [r for r in recs if r["test"] == "tg" and r["model"] == "qwen3-32b" and r["n_cards"] == 1]
    s = cm.Setup("qwen3-32b", "rtx-3090")
    assert [r["avg_ts"] for r in tg] == [cm.decode(s, d).tok_s for d in DEPTHS]
    assert all(r["mla_strategy"] == "" for r in tg)
    pp = [r for r in recs if r["test"] == "pp" and r["model"] == "glm-4.7-flash" and r["n_cards"] == 2]
    assert [r["n_prompt"] for r in pp] == [512] * 3 and pp[0]["link_gbps"] == 1.4 and pp[0]["mla_strategy"] == "flash"
    mem = [r for r in recs if r["test"] == "mem" and r["model"] == "qwen3-32b" and r["n_cards"] == 1]
    assert [r["fits"] for r in mem] == [True, True, False]
    assert mem[0]["mem_bytes"] == cm.memory(s, 1024).total
    # the records round-trip through CSV and JSON
    json.loads(records.to_json(recs))
    records.to_csv(recs)


def test_predict_serve_and_setups_as_given():
    s = cm.Setup("glm-4.7-flash", hw.study_rig(), split="layer", weights="iq4_xs", runtime="ideal")
    recs = sweep.predict(None, [s], [4096], tests=("serve",), concurrency=(1, 8))
    assert [r["concurrency"] for r in recs] == [1, 8]
    assert recs[1]["aggregate_tok_s"] == pytest.approx(cm.serve(s, 8, 4096)["aggregate_tok_s"])
    assert recs[0]["runtime"] == "ideal" and recs[0]["weights"] == "iq4_xs"


def test_predict_resumes(tmp_path):
    out = tmp_path / "pred.json"
    first = sweep.predict(["qwen3-32b"], SETUPS, DEPTHS, tests=("tg",), out=out)
    stored = records.read_records(out)
    assert len(stored) == len(first) == 6
    again = sweep.predict(["qwen3-32b"], SETUPS, DEPTHS + [131072], tests=("tg",), out=out)
    assert len(again) == 8 and again[:3] == first[:3] and again[4:7] == first[3:]
    assert records.resume_summary(stored, again, sweep._key) == {"reused": 6, "computed": 2, "replaced": 0,
                                                                 "retimed": 0, "edited": 0}
    assert len(records.read_records(out)) == 8
    with pytest.raises(ValueError, match=r"\.json"):
        sweep.predict(["qwen3-32b"], SETUPS, DEPTHS, out=tmp_path / "x.csv")


def test_predict_resume_recomputes_a_record_edited_by_hand(tmp_path):
    """A stored record whose fields were changed by hand (its fingerprint, of the inputs, unchanged) was
    carried on as a prediction by every resumed sweep: an `avg_ts` typed in, an `n_cards` that the numbers
    were not priced for. Each point is priced again and compared; an edited record is replaced and counted."""
    out = tmp_path / "pred.json"
    first = sweep.predict(["qwen3-32b"], SETUPS, DEPTHS, tests=("tg", "pp"), out=out)
    stored = records.read_records(out)
    edited = [dict(r) for r in stored]
    edited[0]["avg_ts"] = 12345.678
    edited[1]["n_cards"] = 8
    edited[2]["weights"] = "bf16"
    records.write_records(out, edited)
    again = sweep.predict(["qwen3-32b"], SETUPS, DEPTHS, tests=("tg", "pp"), out=out)
    assert again == first
    assert records.read_records(out) == stored
    n = records.resume_summary(edited, again, sweep._key)
    assert n == {"reused": len(first) - 3, "computed": 0, "replaced": 0, "retimed": 0, "edited": 3}
    # a fingerprint changed by hand is a change of inputs: recomputed as before
    edited = [dict(r) for r in stored]
    edited[0]["fingerprint"] = "0" * 16
    records.write_records(out, edited)
    again = sweep.predict(["qwen3-32b"], SETUPS, DEPTHS, tests=("tg", "pp"), out=out)
    assert again == first and records.resume_summary(edited, again, sweep._key)["replaced"] == 1


def test_predict_errors():
    with pytest.raises(ValueError, match="`tests`"):
        sweep.predict(["qwen3-32b"], SETUPS, DEPTHS, tests=("decode",))
    with pytest.raises(ValueError, match="`depths` must be >= 0, got -5"):
        sweep.predict(["qwen3-32b"], SETUPS, [-5])
    with pytest.raises(ValueError, match="`setups` is empty"):
        sweep.predict(["qwen3-32b"], [], DEPTHS)
    with pytest.raises(TypeError, match="costmodel.Setup or a dict"):
        sweep.predict(["qwen3-32b"], ["rtx-3090"], DEPTHS)
    with pytest.raises(ValueError, match="neither a built-in"):
        sweep.predict(["qwen9"], SETUPS, DEPTHS)


def test_a_point_asked_for_twice_is_one_record_and_the_resume_line_adds_up(tmp_path, capsys):
    """`glmbench sweep --model qwen3-32b --model qwen3-32b --tests tg,tg --out F.json`: each point was priced
    and returned twice while the file held it once, and the last line said "wrote 4 records ... the file holds
    1 records (-3 of points outside this run)". Now one record per point, on stdout and in the file."""
    from glmbench import cli
    out = str(tmp_path / "s.json")
    args = ["sweep", "--model", "qwen3-32b", "--model", "qwen3-32b", "--cards", "1", "--depths", "1K,2K",
            "--tests", "tg,tg,mem", "--quiet", "--json", "--out", out]
    assert cli.main(args) == 0
    cap = capsys.readouterr()
    printed = json.loads(cap.out)
    assert len(printed) == 4 and len({sweep._key(r) for r in printed}) == 4
    assert "wrote 4 records" in cap.err and "the file holds 4 records" in cap.err and "outside" not in cap.err
    assert records.read_records(out) == printed
    recs = sweep.predict(["qwen3-32b", "qwen3-32b"], [dict(rig="rtx-3090")], [1024, 1024], ("tg", "tg"))
    assert len(recs) == 1
