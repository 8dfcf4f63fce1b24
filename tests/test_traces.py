"""Trace readers: the four shipped traces by name, Mooncake/Azure/plain files, and a malformed
line named by file and line."""
import hashlib
import os

import pytest

from glmbench.predict import traces

SHIPPED = {"mooncake-conversation": 12031, "mooncake-synthetic": 3993, "azure-code-2023": 8819,
           "azure-conv-2023": 19366}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_traces_load_by_name(name):
    t = traces.load(name)
    assert len(t) == SHIPPED[name]
    assert t.arrival_s[0] == 0.0 and all(b >= a for a, b in zip(t.arrival_s, t.arrival_s[1:]))
    assert min(t.prompt) >= 1 and min(t.output) >= 1
    assert t.attribution and os.path.isfile(t.meta["license_file"])
    assert t.has_prefixes == name.startswith("mooncake")
    # an hour or so of requests
    assert 900 < t.duration_s < 4000


def test_mooncake_conversation_matches_the_paper():
    t = traces.load("mooncake-conversation")
    s = t.summary()
    # FAST'25 Table 2: average input 12,035, output 343
    assert round(s["mean_prompt"]) == 12035 and round(s["mean_output"]) == 343
    assert all(h[0] == 0 for h in t.hash_ids)        # block 0 is shared by every request


def test_shipped_files_are_the_shared_copies():
    shared = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "traces")
    if not os.path.isdir(shared):
        pytest.skip("../shared/traces is not here")
    for name, (fname, *_rest) in traces.TRACES.items():
        a = open(os.path.join(traces.TRACE_DIR, fname), "rb").read()
        b = open(os.path.join(shared, fname), "rb").read()
        assert hashlib.sha256(a).hexdigest() == hashlib.sha256(b).hexdigest(), name
    for lic in ("LICENSE-Apache-2.0_Mooncake.txt", "LICENSE-CC-BY-4.0_AzurePublicDataset.txt", "README.md"):
        assert os.path.isfile(os.path.join(traces.TRACE_DIR, lic))


def _azure(tmp_path, rows, name="az.csv"):
    """An Azure-trace CSV of `rows` ("time,context,generated" lines) in tmp_path, and its path."""
    p = tmp_path / name
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(r + "\n" for r in rows))
    return p

def test_azure_timestamps_keep_seven_digits(tmp_path):
    t = traces.read(_azure(tmp_path, ["2023-11-16 18:17:03.9799600,4808,10", "2023-11-16 18:17:04.0319601,3180,8"]))
    assert t.prompt == [4808, 3180] and t.output == [10, 8]
    assert t.arrival_s[1] == pytest.approx(0.0520001, abs=1e-6)
    assert t.hash_ids == [None, None]


def test_azure_timestamps_keep_the_100_ns_digit(tmp_path):
    # the wall-clock time as one float of Unix seconds (1.7e9) has steps of 2.4e-7 s: a 100 ns
    # digit was lost (up to 2.05e-7 s off on azure-conv-2023) and two requests 100 ns apart could
    # arrive together
    t = traces.read(_azure(tmp_path, ["2023-11-16 18:17:03.9799600,4808,10", "2023-11-16 18:17:03.9799601,3180,8",
                                      "2023-11-16 18:17:03.9799603,10,8", "2023-11-16 19:14:03.9799602,10,8"]))
    assert t.arrival_s[:3] == [0.0, pytest.approx(1e-7, abs=1e-13), pytest.approx(3e-7, abs=1e-13)]
    assert t.arrival_s[3] == pytest.approx(3420.0000002, abs=1e-10)


def test_azure_2024_timestamps_with_a_utc_offset(tmp_path):
    # the 2024 release (AzureLLMInferenceTrace_*_1week.csv) writes pandas' tz-aware times,
    # 2024-05-10 00:00:00.009930+00:00: the reader said it reads the 2024 release and refused them
    t = traces.read(_azure(tmp_path, ["2024-05-10 00:00:00.009930+00:00,2162,5", "2024-05-10 00:00:00.011720+00:00,2400,20",
                                      "2024-05-10 02:00:01.011720+02:00,10,2", "2024-05-10 00:00:02Z,10,2"], "az24.csv"))
    assert t.prompt == [2162, 2400, 10, 10] and t.meta["format"] == "azure"
    assert t.arrival_s == [0.0, pytest.approx(0.00179, abs=1e-12), pytest.approx(1.00179, abs=1e-12),
                           pytest.approx(1.99007, abs=1e-12)]
    with pytest.raises(ValueError, match="az24.csv:2: `TIMESTAMP` must look like"):
        traces.read(_azure(tmp_path, ["2024-05-10 00:00:00.009930+0x:00,2162,5"], "az24.csv"))


def test_azure_timestamps_with_an_iso_t(tmp_path):
    # the same trace written back by a script with isoformat() (2023-11-16T18:17:03.979960): refused before
    t = traces.read(_azure(tmp_path, ["2023-11-16T18:17:03.9799600,4808,10", "2023-11-16 18:17:04.0319601,3180,8",
                                      "2023-11-16T18:17:05+00:00,10,2"]))
    assert t.prompt == [4808, 3180, 10]
    assert t.arrival_s == [0.0, pytest.approx(0.0520001, abs=1e-9), pytest.approx(1.02004, abs=1e-9)]
    with pytest.raises(ValueError, match="az.csv:2: `TIMESTAMP` must look like"):
        traces.read(_azure(tmp_path, ["2023-11-16X18:17:03.9799600,4808,10"]))


def test_plain_csv_and_jsonl(tmp_path):
    c = tmp_path / "plain.csv"
    c.write_text("arrival_s,prompt_tokens,output_tokens\n0.5,100,10\n0.0,200,0\n")
    t = traces.read(c)
    # sorted by arrival, with a notice; a zero output is a request that failed in the trace: kept
    # as 0 (the replay counts it as failed, never as a 1-token request)
    assert t.prompt == [200, 100] and t.output == [0, 10] and t.meta["zero_output_requests"] == 1
    assert any("not in time order" in n for n in t.meta["notices"]) and t.meta["unsorted_arrivals"] == 1
    j = tmp_path / "plain.jsonl"
    j.write_text('{"arrival_s": 0, "prompt_tokens": 1000, "output_tokens": 3, "hash_ids": [1, 2]}\n'
                 '{"arrival_s": 1.5, "prompt_tokens": 10, "output_tokens": 3}\n')
    t = traces.read(j)
    assert t.hash_ids == [(1, 2), None] and t.has_prefixes


BURST = ("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
         "5,ChatGPT,472,18,490,Conversation log\n"
         "45,ChatGPT,1087,0,1087,Conversation log\n"
         "118,GPT-4,417,276,693,API log\n"
         "120,ChatGPT,0,12,12,Conversation log\n")


def test_burstgpt_csv(tmp_path):
    """BurstGPT's layout (Timestamp in seconds, Request / Response tokens): a failed request (0 response
    tokens) is kept as failed, a row without request tokens has nothing to replay and is left out, said."""
    p = tmp_path / "BurstGPT_1.csv"
    p.write_text(BURST)
    t = traces.read(p)
    assert t.meta["format"] == "burstgpt"
    assert t.arrival_s == [0.0, 40.0, 113.0] and t.prompt == [472, 1087, 417] and t.output == [18, 0, 276]
    assert t.meta["zero_output_requests"] == 1 and t.meta["zero_prompt_rows"] == 1
    assert any("0 request tokens" in n for n in t.meta["notices"])
    bad = tmp_path / "bad.csv"
    bad.write_text(BURST.replace("118,GPT-4,417", "118,GPT-4,many"))
    with pytest.raises(ValueError, match=r"bad\.csv:4: .*Request tokens"):
        traces.read(bad)


def test_mooncake_file(tmp_path):
    j = tmp_path / "m.jsonl"
    j.write_text('{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n'
                 '{"timestamp": 1500, "input_length": 10, "output_length": 2, "hash_ids": [0]}\n')
    before = j.read_bytes()
    t = traces.read(j)
    assert t.arrival_s == [0.0, 1.5] and t.prompt == [600, 10]
    assert j.read_bytes() == before
    s = t.scaled(3.0)
    assert s.arrival_s == [0.0, 0.5] and t.arrival_s == [0.0, 1.5]


@pytest.mark.parametrize("text, line, what", [
    ('{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n{"timestamp": 1\n', 2, "JSON"),
    ('{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0]}\n', 1, "hash_ids"),
    ('{"timestamp": 0, "input_length": -3, "output_length": 5}\n', 1, "prompt tokens"),
    ('{"timestamp": 0, "output_length": 5}\n', 1, "input_length"),
    ('{"timestamp": "x", "input_length": 3, "output_length": 5}\n', 1, "timestamp"),
    ('[1, 2]\n', 1, "object"),
    ('{"foo": 1}\n', 1, "Mooncake"),
])
def test_malformed_jsonl_names_file_and_line(tmp_path, text, line, what):
    p = tmp_path / "bad.jsonl"
    p.write_text(text)
    with pytest.raises(ValueError, match=rf"bad\.jsonl:{line}: .*{what}"):
        traces.read(p)


def test_a_cut_jsonl_line_says_where_in_the_line(tmp_path):
    """A line cut inside a string said 'not valid JSON (Invalid control character at)': Python's message
    without its position. Now the column is given, and the message reads whole."""
    p = tmp_path / "cut.jsonl"
    p.write_text('{"timestamp": 0, "input_length": 6, "output_length": 5, "hash_ids": [0]}\n'
                 '{"timestamp": 5, "input_length": 10, "output_le\n')
    with pytest.raises(ValueError) as e:
        traces.read(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:2: not valid JSON") and "column 48" in msg, msg   # the newline that cut the key
    assert not msg.rstrip(")").endswith(" at"), msg


@pytest.mark.parametrize("text, line, what", [
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,10,2\n2023-11-16,10,2\n", 3, "TIMESTAMP"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,ten,2\n", 2, "prompt tokens"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.97,10\n", 2, "fields"),
    ("a,b,c\n1,2,3\n", 1, "header"),
    ("arrival_s,prompt_tokens,output_tokens\n-1,10,2\n", 2, "arrival"),
])
def test_malformed_csv_names_file_and_line(tmp_path, text, line, what):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=rf"bad\.csv:{line}: .*{what}"):
        traces.read(p)


def test_a_header_in_another_case_is_read(tmp_path):
    """A header lower-cased by a script or spreadsheet (timestamp,contexttokens,generatedtokens) was refused
    as no known layout; its columns are read as the layout's, and an error names the file's own column."""
    p = tmp_path / "lower.csv"
    p.write_text("timestamp,contexttokens,generatedtokens,extra\n2023-11-16 18:17:03.9799600,100,10,x\n"
                 "2023-11-16 18:17:05.0000000,200,20,y\n")
    t = traces.read(p)
    assert t.meta["format"] == "azure" and t.prompt == [100, 200] and t.output == [10, 20]
    assert t.arrival_s == [0.0, pytest.approx(1.02004, abs=1e-12)]
    p.write_text("ARRIVAL_S,Prompt_Tokens,output_tokens\n0,100,10\n")
    assert traces.read(p).meta["format"] == "plain"
    p.write_text("timestamp,contexttokens,generatedtokens\n2023-11-16 18:17:03.9799600,-1,10\n")
    with pytest.raises(ValueError, match=r"lower\.csv:2: `contexttokens` \(prompt tokens\) must be >= 1"):
        traces.read(p)


def test_a_semicolon_separated_header_is_named(tmp_path):
    p = tmp_path / "semi.csv"
    p.write_text("TIMESTAMP;ContextTokens;GeneratedTokens\n2023-11-16 18:17:03.9799600;100;10\n")
    with pytest.raises(ValueError, match=r"semi\.csv:1: header must hold .*separated by ';'"):
        traces.read(p)


def test_unsorted_notice_counts_its_rows(tmp_path):
    p = tmp_path / "u.csv"
    p.write_text("arrival_s,prompt_tokens,output_tokens\n2,10,1\n1,10,1\n")
    assert "(1 request arrives before the one above it)" in traces.read(p).meta["notices"][0]
    p.write_text("arrival_s,prompt_tokens,output_tokens\n3,10,1\n2,10,1\n1,10,1\n")
    assert "(2 requests arrive before the one above them)" in traces.read(p).meta["notices"][0]


def test_an_upper_case_suffix_is_read(tmp_path):
    """TRACE.CSV / TRACE.JSONL (as a spreadsheet or another OS names them) were refused: 'trace files end
    in .jsonl ... or .csv'."""
    c = tmp_path / "AZURE.CSV"
    c.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,100,10\n")
    assert traces.load(str(c)).prompt == [100]
    j = tmp_path / "MOON.JSONL"
    j.write_text('{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}\n')
    assert traces.load(str(j)).hash_ids == [(0, 1)]
    t = tmp_path / "T.TXT"
    t.write_text("x")
    with pytest.raises(ValueError, match="trace files end in"):
        traces.load(str(t))


@pytest.mark.parametrize("text", [
    '[\n  {"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 2}\n]\n',
    '[{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 2}]\n',
])
def test_a_json_array_is_named_as_one(tmp_path, text):
    """A .json file holding one array of requests said only 'not valid JSON (Expecting value)' or
    'expected a JSON object, got list' at line 1."""
    p = tmp_path / "reqs.json"
    p.write_text(text)
    with pytest.raises(ValueError, match=r"reqs\.json:1: .*one JSON array: a trace holds one JSON object per line"):
        traces.read(p)


def test_unknown_name_and_bad_paths(tmp_path):
    with pytest.raises(ValueError, match="unknown trace"):
        traces.load("no-such-trace")
    with pytest.raises(ValueError, match="folder"):
        traces.read(tmp_path)
    p = tmp_path / "t.txt"
    p.write_text("x")
    with pytest.raises(ValueError, match=r"\.jsonl"):
        traces.read(p)
    e = tmp_path / "e.jsonl"
    e.write_text("\n")
    with pytest.raises(ValueError, match="no requests"):
        traces.read(e)


def test_plain_jsonl_block_tokens_are_the_traces(tmp_path):
    """A plain JSONL trace in 16-token blocks (vLLM's) was replayed as 512-token blocks: 8 shared
    blocks (128 tokens) counted as 2 x 512 cached tokens. The lines' block size is the Trace's; lines
    that disagree are an error naming the line."""
    j = tmp_path / "b16.jsonl"
    j.write_text('{"arrival_s": 0, "prompt_tokens": 64, "output_tokens": 3, "hash_ids": [1, 2, 3, 4], "block_tokens": 16}\n'
                 '{"arrival_s": 1, "prompt_tokens": 10, "output_tokens": 3}\n'
                 '{"arrival_s": 2, "prompt_tokens": 40, "output_tokens": 3, "hash_ids": [1, 2, 5], "block_tokens": 16}\n')
    t = traces.read(j)
    assert t.block_tokens == 16 and t.hash_ids[2] == (1, 2, 5)
    j.write_text('{"arrival_s": 0, "prompt_tokens": 64, "output_tokens": 3, "hash_ids": [1, 2, 3, 4], "block_tokens": 16}\n'
                 '{"arrival_s": 1, "prompt_tokens": 600, "output_tokens": 3, "hash_ids": [7, 8]}\n')
    with pytest.raises(ValueError, match=r"b16\.jsonl:2: .*blocks of 512 .*line 1.*blocks of 16"):
        traces.read(j)


@pytest.mark.parametrize("text, line, what", [
    ("arrival_s,prompt_tokens,output_tokens\n0,1\u00b2,10\n", 2, "whole number"),      # '1²': isdigit, not int()
    ("arrival_s,prompt_tokens,output_tokens\n0,100,10\n0,10,100000000000000000000\n", 3, "more tokens than"),
])
def test_odd_token_counts_name_the_line(tmp_path, text, line, what):
    """'1²' raised int()'s bare 'invalid literal'; a 1e20-token length crashed the replay (int64)."""
    p = tmp_path / "odd.csv"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"odd\.csv:{line}: .*{what}"):
        traces.read(p)
    j = tmp_path / "odd.jsonl"
    j.write_text('{"timestamp": 0, "input_length": 1e30, "output_length": 5}\n')
    with pytest.raises(ValueError, match=r"odd\.jsonl:1: .*prompt tokens.*more tokens than"):
        traces.read(j)


def test_non_utf8_byte_is_located_in_the_file_not_the_chunk(tmp_path):
    """The offset came from the text reader's chunk (8 KB), so a bad byte 35 KB in was said to be at
    byte ~2K, and no line was named."""
    head = "arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{i},100,10\n" for i in range(3000))
    p = tmp_path / "late.csv"
    p.write_bytes(head.encode() + b"3000,1\xff0,10\n")
    with pytest.raises(ValueError, match=rf"late\.csv:3002: not a text file \(not UTF-8 at byte {len(head) + 6}\)"):
        traces.read(p)


@pytest.mark.parametrize("name,text,column", [     # (the csv's bad value on its line 3, after its header; the jsonl's on 2)
    ("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,10,5\nx,1,1\n", "arrival_s"),
    ("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,ten,1\n", "prompt_tokens"),
    ("t.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,10,5\n"
              "2023-11-16 18:15:47.6805900,10,-1\n", "GeneratedTokens"),
    ("t.jsonl", '{"arrival_s": 0, "prompt_tokens": 10, "output_tokens": 5}\n'
                '{"arrival_s": 1, "prompt_tokens": 10, "output_tokens": 2.5}\n', "output_tokens"),
    ("t.jsonl", '{"timestamp": 0, "input_length": 10, "output_length": 5}\n'
                '{"timestamp": 1000, "input_length": 0, "output_length": 5}\n', "input_length")])
def test_a_bad_value_is_named_by_the_files_own_column(tmp_path, name, text, column):
    """A malformed value names the line and the column as the file names it (`arrival_s`, not `arrival`)."""
    p = tmp_path / name
    p.write_text(text)
    line = 3 if name.endswith(".csv") else 2
    with pytest.raises(ValueError, match=rf"{name}:{line}: `{column}` \([a-z ]+\) must be"):
        traces.load(str(p))
