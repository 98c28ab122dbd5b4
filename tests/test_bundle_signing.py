"""Signed bundles: a leaderboard that trusts a key accepts only what that key signed, unchanged.

Everything goes through public interfaces: the `pytest-marathon` command line, `Recorder`,
`read_bundle` and `score_bundle`. The forger below holds everything but the private key.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest
from bundle_rewrite import rerecord
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_marathon.bundle import (
    BundleError,
    Recorder,
    load_private_key,
    load_public_key,
    read_bundle,
    sign_bundle,
)
from pytest_marathon.cli import main
from pytest_marathon.scoring import score_bundle

MANIFEST = {
    "release": "pytest-marathon test",
    "app": "boutique",
    "scenario": "short-5",
    "seed": 3,
    "agent": "noop",
    "agent_flags": {},
    "config": {"delta_s": 120.0},
    "backend": "twin",
}
RUN = ["run", "--app", "boutique", "--agent", "noop", "--seed", "1", "--scenario", "short-5",
       "--alerts", "0"]


@pytest.fixture
def keys(tmp_path: Path) -> Path:
    """A key pair made by `pytest-marathon keygen`; returns PREFIX (PREFIX.key, PREFIX.pub)."""
    prefix = tmp_path / "keys" / "lab"
    prefix.parent.mkdir()
    assert main(["keygen", "--out", str(prefix)]) == 0
    return prefix


def _record(directory: Path, sign_key=None, degraded: float = 0.5) -> Path:
    """A small sealed bundle (one fault, two SLI ticks, one read)."""
    with Recorder(directory, MANIFEST, sign_key=sign_key) as recorder:
        recorder.append("schedule", {"fault_id": "f01", "inject_at": 0.0, "revert_at": 300.0,
                                     "scope": ["cartservice"]})
        recorder.append("sli", {"t": 0.0, "q": 10.0, "e": 0.0, "l": 0.0})
        recorder.append("sli", {"t": 5.0, "q": 10.0, "e": degraded, "l": 0.0})
        recorder.append("tool_calls", {"t": 120.0, "invocation": 1, "seq": 1, "tool": "get_alerts",
                                       "kind": "read", "verdict": "ok", "wall_ms": 1.0})
        recorder.append("invocations", {"n": 1, "t": 120.0, "wall_s": 1.0, "status": "ok"})
    return directory


def _forge(source: Path, target: Path, *, keep_signature: bool) -> Path:
    """What someone without the private key can do: rewrite a stream (here: the degradation
    halved), re-record the bundle so that every digest of the manifest is right again, and
    keep the original signature file (or drop it)."""
    rerecord(
        source,
        target,
        lambda stream, record: {**record, "e": record["e"] / 2} if stream == "sli" else record,
    )
    if keep_signature:
        shutil.copyfile(source / "signature.json", target / "signature.json")
    return target


def _one_line_error(capsys: pytest.CaptureFixture, code: int) -> str:
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    return err


# keys ----------------------------------------------------------------------------------------


def test_keygen_writes_a_private_key_only_its_owner_reads_and_a_public_key(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["keygen", "--out", str(tmp_path / "lab")]) == 0
    private, public = tmp_path / "lab.key", tmp_path / "lab.pub"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert private.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    key = load_private_key(private)
    assert key.public_key() == load_public_key(public)
    out = capsys.readouterr().out
    assert str(private) in out and str(public) in out and "key id:" in out


def test_keygen_refuses_to_overwrite_either_key(keys: Path, capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    before = {suffix: Path(f"{keys}{suffix}").read_bytes() for suffix in (".key", ".pub")}
    err = _one_line_error(capsys, main(["keygen", "--out", str(keys)]))
    assert f"{keys}.key already exists" in err
    Path(f"{keys}.key").unlink()
    err = _one_line_error(capsys, main(["keygen", "--out", str(keys)]))
    assert f"{keys}.pub already exists" in err and not Path(f"{keys}.key").exists()
    assert Path(f"{keys}.pub").read_bytes() == before[".pub"]


def _bad_key_files(tmp_path: Path, keys: Path) -> dict[str, tuple[Path, str]]:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    files = {
        "rsa.key": rsa_key.private_bytes(serialization.Encoding.PEM,
                                         serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()),
        "rsa.pub": rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo),
        "locked.key": ed25519.Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret")),
        "garbage.key": b"not a key\n",
        "broken.key": b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return {
        "missing": (tmp_path / "nothing.key", "does not exist"),
        "folder": (tmp_path, "is not a file"),
        "garbage": (tmp_path / "garbage.key", "is not a PEM key file"),
        "broken": (tmp_path / "broken.key", "is not a PEM"),
        "rsa": (tmp_path / "rsa.key", "a key of type RSA; bundles are signed with Ed25519"),
        "rsa-public": (tmp_path / "rsa.pub", "a key of type RSA"),
        "encrypted": (tmp_path / "locked.key", "password-protected"),
        "public-for-private": (Path(f"{keys}.pub"), "holds a public key"),
        "private-for-public": (Path(f"{keys}.key"), "holds a private key"),
    }


@pytest.mark.parametrize(
    "case", ["missing", "folder", "garbage", "broken", "rsa", "encrypted", "public-for-private"]
)
def test_a_bad_sign_key_is_a_one_line_error_and_nothing_runs(
    tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture, case: str
) -> None:
    path, expected = _bad_key_files(tmp_path, keys)[case]
    out = tmp_path / "bundles"
    err = _one_line_error(capsys, main([*RUN, "--out", str(out), "--sign-key", str(path)]))
    assert "--sign-key" in err and expected in err and str(path) in err
    assert not out.exists()


@pytest.mark.parametrize(
    "case", ["missing", "garbage", "rsa-public", "private-for-public"]
)
def test_a_bad_verify_key_is_a_one_line_error(
    tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture, case: str
) -> None:
    bundle = _record(tmp_path / "run")
    path, expected = _bad_key_files(tmp_path, keys)[case]
    err = _one_line_error(capsys, main(["score", str(bundle), "--verify-key", str(path)]))
    assert "--verify-key" in err and expected in err


def test_a_bad_plugin_sign_key_is_a_usage_error_before_any_run(
    pytester: pytest.Pytester, tmp_path: Path, keys: Path
) -> None:
    result = pytester.runpytest_subprocess(
        "--marathon-app=boutique", "--agent=noop", f"--marathon-sign-key={keys}.pub"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if "marathon-sign-key" in line]
    assert len(errors) == 1 and "holds a public key" in errors[0], result.errlines
    assert not (pytester.path / ".marathon").exists()


# signing and verifying -----------------------------------------------------------------------


def test_a_signed_bundle_verifies_and_says_by_whom(tmp_path: Path, keys: Path) -> None:
    key = load_private_key(f"{keys}.key")
    bundle_dir = _record(tmp_path / "run", sign_key=key)
    signature = bundle_dir / "signature.json"
    assert not stat.S_IMODE(signature.stat().st_mode) & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    document = json.loads(signature.read_text())
    assert document["algorithm"] == "ed25519" and len(document["key_id"]) == 16
    plain = read_bundle(bundle_dir)
    assert plain.signature == {"key_id": document["key_id"], "algorithm": "ed25519",
                               "verified_with_key": False}
    trusted = read_bundle(bundle_dir, verify_key=f"{keys}.pub")
    assert trusted.signature["verified_with_key"] is True
    assert score_bundle(bundle_dir, verify_key=load_public_key(f"{keys}.pub"))["run"][
        "signature"] == trusted.signature
    assert score_bundle(bundle_dir)["run"]["signature"]["verified_with_key"] is False
    unsigned = _record(tmp_path / "plain")
    assert read_bundle(unsigned).signature is None
    assert score_bundle(unsigned)["run"]["signature"] is None


def test_a_forged_stream_with_recomputed_digests_is_refused_when_signed(
    tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture
) -> None:
    source = _record(tmp_path / "run", sign_key=load_private_key(f"{keys}.key"))
    forged = _forge(source, tmp_path / "forged", keep_signature=True)
    with pytest.raises(BundleError, match="does not verify against its manifest.json"):
        read_bundle(forged)
    code = main(["score", str(forged)])
    assert code == 2 and "refused" in capsys.readouterr().err


def test_an_unsigned_forgery_passes_without_a_key_and_is_refused_with_one(
    tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture
) -> None:
    """The reason to sign: digests alone cannot tell the forgery from the run."""
    source = _record(tmp_path / "run", sign_key=load_private_key(f"{keys}.key"))
    forged = _forge(source, tmp_path / "forged", keep_signature=False)
    assert read_bundle(forged).signature is None
    assert main(["score", str(forged), "--json"]) == 0
    capsys.readouterr()
    code = main(["score", str(forged), "--verify-key", f"{keys}.pub"])
    err = capsys.readouterr().err
    assert code == 2 and "is not signed" in err
    assert main(["score", str(source), "--verify-key", f"{keys}.pub", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["run"]["signature"]["verified_with_key"] is True


def test_a_bundle_signed_by_another_key_is_refused(tmp_path: Path, keys: Path) -> None:
    other = ed25519.Ed25519PrivateKey.generate()
    bundle_dir = _record(tmp_path / "run", sign_key=other)
    assert read_bundle(bundle_dir).signature is not None
    with pytest.raises(BundleError, match="signed by key .*, not by the trusted key"):
        read_bundle(bundle_dir, verify_key=f"{keys}.pub")
    with pytest.raises(BundleError, match="not by the trusted key"):
        score_bundle(read_bundle(bundle_dir), verify_key=load_public_key(f"{keys}.pub"))


def test_the_noop_baseline_is_verified_with_the_same_key(
    tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture
) -> None:
    key = load_private_key(f"{keys}.key")
    agent = _record(tmp_path / "agent", sign_key=key)
    unsigned_noop = _record(tmp_path / "noop")
    command = ["score", str(agent), "--noop", str(unsigned_noop), "--verify-key", f"{keys}.pub"]
    assert main(command) == 2
    assert f"{unsigned_noop} is not signed" in capsys.readouterr().err
    signed_noop = _record(tmp_path / "noop-signed", sign_key=key)
    assert main(["score", str(agent), "--noop", str(signed_noop), "--verify-key",
                 f"{keys}.pub", "--json"]) == 0


def test_sign_bundle_signs_a_sealed_bundle_once(tmp_path: Path, keys: Path) -> None:
    bundle_dir = _record(tmp_path / "run")
    sign_bundle(bundle_dir, load_private_key(f"{keys}.key"))
    assert read_bundle(bundle_dir, verify_key=f"{keys}.pub").signature["verified_with_key"]
    with pytest.raises(BundleError, match="already signed"):
        sign_bundle(bundle_dir, load_private_key(f"{keys}.key"))


def test_an_incomplete_bundle_is_never_signed(tmp_path: Path, keys: Path) -> None:
    key = load_private_key(f"{keys}.key")
    with pytest.raises(RuntimeError), Recorder(tmp_path / "run", MANIFEST, sign_key=key) as rec:
        rec.append("sli", {"t": 0.0, "q": 1.0, "e": 0.0, "l": 0.0})
        raise RuntimeError("twin crashed")
    assert not (tmp_path / "run" / "signature.json").exists()
    with pytest.raises(BundleError, match="not signed"):
        read_bundle(tmp_path / "run", allow_incomplete=True, verify_key=f"{keys}.pub")


def _respell_base64(text: str) -> str:
    """The same bytes in another spelling: the last character before the padding carries unused
    low bits, which a lax decoder ignores."""
    import base64

    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    body = text.rstrip("=")
    last = alphabet.index(body[-1])
    respelled = body[:-1] + alphabet[last ^ 1] + text[len(body):]
    assert base64.b64decode(respelled) == base64.b64decode(text) and respelled != text
    return respelled


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda doc: {**doc, "public_key": _respell_base64(doc["public_key"])}, "canonical base64"),
        (lambda doc: {**doc, "signature": _respell_base64(doc["signature"])}, "canonical base64"),
        (lambda doc: {**doc, "key_id": "0123456789abcdef"}, "key_id does not name its public key"),
        (lambda doc: {**doc, "algorithm": "Ed25519"}, "unknown algorithm 'Ed25519'"),
        (lambda doc: {**doc, "signed_file": "sli.jsonl"}, "does not sign manifest.json"),
        (lambda doc: {**doc, "note": "trust me"}, "must hold exactly"),
        (lambda doc: " " + json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n",
         "modified after it was written"),
        (lambda doc: json.dumps(doc, sort_keys=True, separators=(",", ":")) + " ",
         "modified after it was written"),
    ],
)
def test_a_signature_file_that_says_the_same_in_other_bytes_is_refused(
    tmp_path: Path, edit, reason: str
) -> None:
    """Signatures that still verify, spelled differently: refused, so that a signed bundle has
    one form and no byte of it can change unnoticed."""
    key = ed25519.Ed25519PrivateKey.generate()
    directory = _record(tmp_path / "run", sign_key=key)
    path = directory / "signature.json"
    edited = edit(json.loads(path.read_text()))
    if isinstance(edited, dict):
        edited = json.dumps(edited, sort_keys=True, separators=(",", ":")) + "\n"
    path.chmod(0o644)
    path.write_text(edited)
    with pytest.raises(BundleError, match=reason):
        read_bundle(directory)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_flipping_any_byte_of_a_signed_bundle_is_refused(tmp_path_factory, data) -> None:
    """Any byte of any file, the manifest and the signature included: refused, with or without
    a trusted key (whitespace, unused base64 bits and equal-JSON spellings too)."""
    root = tmp_path_factory.mktemp("signed")
    key = ed25519.Ed25519PrivateKey.generate()
    directory = _record(root / "run", sign_key=key)
    files = sorted(p.name for p in directory.iterdir() if p.stat().st_size)
    name = data.draw(st.sampled_from(files))
    if name != "signature.json":  # make flips of the signature file more frequent
        name = data.draw(st.sampled_from([name, "signature.json", "manifest.json"]))
    path = directory / name
    raw = bytearray(path.read_bytes())
    offset = data.draw(st.integers(0, len(raw) - 1))
    raw[offset] ^= data.draw(st.integers(1, 255))
    path.chmod(0o644)
    path.write_bytes(bytes(raw))
    with pytest.raises(BundleError):
        read_bundle(directory)
    with pytest.raises(BundleError):
        read_bundle(directory, verify_key=key.public_key())


# end to end ----------------------------------------------------------------------------------


def test_run_signs_its_bundle_and_its_noop_baseline(
    tmp_path: Path, keys: Path, capsys: pytest.CaptureFixture
) -> None:
    cache = tmp_path / "cache"
    code = main(["run", "--app", "boutique", "--agent", "runbook", "--seed", "1", "--scenario",
                 "short-5", "--alerts", "0", "--json", "--out", str(tmp_path / "b"),
                 "--baseline-cache", str(cache), "--sign-key", f"{keys}.key"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    noop = result["noop_bundle"]
    assert Path(noop, "signature.json").is_file(), "the baseline the run recorded is signed too"
    assert main(["score", result["bundle"], "--noop", noop, "--verify-key", f"{keys}.pub",
                 "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["run"]["signature"]["verified_with_key"] is True
    assert scored["degradation"]["noop_agent"] == "noop"
    assert "--sign-key" not in json.dumps(read_bundle(result["bundle"]).manifest)
    assert str(keys) not in Path(result["bundle"], "manifest.json").read_text()


def test_the_plugin_signs_every_run(pytester: pytest.Pytester, keys: Path) -> None:
    result = pytester.runpytest_subprocess(
        "--marathon-app=boutique", "--agent=noop", "--marathon-scenario=short-5",
        f"--marathon-sign-key={keys}.key", "-p", "no:cacheprovider",
    )
    result.assert_outcomes(passed=1)
    marathon = pytester.path / ".marathon"
    [bundle] = [p for p in (marathon / "bundles").iterdir() if (p / "manifest.json").is_file()]
    [noop] = [p for p in (marathon / "noop").rglob("manifest.json")]
    for directory in (bundle, noop.parent):
        assert read_bundle(directory, verify_key=f"{keys}.pub").signature["verified_with_key"]
