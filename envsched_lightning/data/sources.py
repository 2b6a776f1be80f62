"""Where each benchmark's data comes from: pinned versions, where each file lies upstream, checksums.

BFCL comes from the official `bfcl-eval` wheel on PyPI (v4 data under `bfcl_eval/data/`), checked by
the wheel's sha256; BFCL v3 (the paper's) from the last wheel that shipped it, 2025.8.6.2, whose data
files are those of gorilla's last v3 commit (cd9429c) byte for byte. ACEBench and tau-bench come from source archives of pinned upstream commits; a
generated archive's bytes are not guaranteed stable, so every file taken from it is checked against
the sha256 of that file at the pinned commit instead.

Every source also bounds what a fetch may write or read (a hostile mirror or archive stops at these):
the download (`max_download_bytes`: a wheel's exact size, a generated archive's size with margin), the
bytes read out of the archive (`max_unpacked_bytes`: a tar's whole decompressed stream), and each
member (twice its size at the pinned commit from `sizes` plus 64 KiB, so a changed file still reaches
its checksum and is reported as changed; else `max_member_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Source:
    """One benchmark's data: the folder it is written to under the data root, and how to get it."""

    folder: str  # under the data root, e.g. "acebench"
    repository: str
    commit: str  # or the package version for a wheel
    license: str
    members: tuple[tuple[str, str], ...]  # (upstream path prefix, local path prefix), first match wins
    files: dict[str, str] = field(default_factory=dict)  # local path -> sha256; empty: every member (wheel)
    url: str = ""  # archive URL ({commit} filled in)
    wheel: str = ""  # "package==version" for `pip download`
    wheel_sha256: str = ""
    skip: tuple[str, ...] = ()  # upstream path prefixes left out
    sizes: dict[str, int] = field(default_factory=dict)  # local path -> bytes at the pinned commit
    max_download_bytes: int = 0  # the archive or wheel, downloaded or given with --archive
    max_unpacked_bytes: int = 0  # read out of the archive (for a tar, its whole decompressed stream)
    max_member_bytes: int = 0  # a member without a pinned size (a wheel's data files)

    def member_cap(self, local: str) -> int:
        """The most bytes the member written as `local` may have."""
        return 2 * self.sizes[local] + (64 << 10) if local in self.sizes else self.max_member_bytes


BFCL = Source(
    folder="bfcl_v4",
    repository="https://github.com/ShishirPatil/gorilla (berkeley-function-call-leaderboard), via PyPI bfcl-eval",
    commit="bfcl-eval 2026.3.23",
    license="Apache-2.0 (the package's metadata: 'Apache 2.0')",
    members=(("bfcl_eval/data/", ""),),
    skip=("bfcl_eval/data/unused_datasets/",),
    wheel="bfcl-eval==2026.3.23",
    wheel_sha256="3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a",
    max_download_bytes=1_925_664,  # the pinned wheel's size
    max_unpacked_bytes=32 << 20,  # its data files: 10.9 MB
    max_member_bytes=8 << 20,  # its largest data file: 3.9 MB
)

BFCL_V3 = replace(  # the paper's BFCL: the same package's last release whose data is v3 (gorilla cd9429c, 2025-08-06)
    BFCL,
    folder="bfcl_v3",
    commit="bfcl-eval 2025.8.6.2",
    wheel="bfcl-eval==2025.8.6.2",
    wheel_sha256="fdb996ac963ed1c6fce1eb4884053aae4a6de282fb931665a46dbeed204a228d",
    max_download_bytes=1_746_683,  # the pinned wheel's size
)

ACEBENCH = Source(
    folder="acebench",
    repository="https://github.com/chenchen0103/ACEBench",
    commit="56dd66cf6439b0d9655ee1b353e4cd745c6f664e",
    license="MIT",
    url="https://codeload.github.com/chenchen0103/ACEBench/tar.gz/{commit}",
    members=(("data_all/data_en/", "data_en/"), ("LICENSE.md", "LICENSE")),
    max_download_bytes=16 << 20,  # the archive at the pinned commit: 1.8 MB
    max_unpacked_bytes=64 << 20,  # its tar stream: 9.6 MB
    files={
        'LICENSE': 'd9a1b1e30d633d5732ea18e3cba9538d293ebc53e1a9e4e96ab739e0c5c4f1cb',
        'data_en/data_agent_multi_step.json': 'c04b7561a2a5b31b3c4fd3067807ab4e0a7907f5a72cd5ec987da3469eac1fe9',
        'data_en/data_agent_multi_turn.json': '0380631f379510fad4aab885b9679cfe99e66cf3a01e92f570f9180141f637d0',
        'data_en/data_normal_atom_bool.json': '59695e59c0d92cd22ec418bfd6f936d0d44a8d6e1fc16e6cb033b12213c57b0b',
        'data_en/data_normal_atom_enum.json': 'a2e870f8ba23687ba182a2bb0bdba0a7e02c21b67f3ebc5cc07a71fc2007d31b',
        'data_en/data_normal_atom_list.json': '2e6c7c35e18379c886c17ae2f52d62637e92a388a1f810025c57206698c3e7ff',
        'data_en/data_normal_atom_number.json': 'eba9d748fcd08f142abf053fe2eecc573c98232f218ff412eb9ea5350abca422',
        'data_en/data_normal_atom_object_deep.json': '2df8cd21fcf7388ee4fa0d98f0587292ba4c14b7c8bde059b3dca18ad885d1ec',
        'data_en/data_normal_atom_object_short.json': 'eef597c5400e17e1c23a7548505e48139a3648d6e5bd5feabbc9b12fcf7a1a76',
        'data_en/data_normal_multi_turn_user_adjust.json': 'b05dd0fe2afb02270ecbdfddfc7a8b1606339c234d5098749742e79bc51ea8cc',
        'data_en/data_normal_multi_turn_user_switch.json': '3ed94d09401c53a99c23edc8b60ebfda8d4ae486f9bea19f87b6000a66588cf0',
        'data_en/data_normal_preference.json': '61413bbfb5f94b3ad74f348d9f33c8c10b531dfcf6e5429caa3f1a91fa64252d',
        'data_en/data_normal_similar_api.json': 'f3ae38a6b56ab27c47bd929f16468598636ff76ecc095ff60c41c8b5a9ee843f',
        'data_en/data_normal_single_turn_parallel_function.json': '7b9b9200cf5224e93f20bf14f076bead8e75d451a7dd6956d346fb1200412235',
        'data_en/data_normal_single_turn_single_function.json': '45278849617f4b3e290db1da13929ba0a43fc4cb3332b461560a519e32af82f2',
        'data_en/data_special_error_param.json': '3ce0f322934d8a8a96eb8bae945949f61c53b74505ba0d65c4850f98e8ba3bae',
        'data_en/data_special_incomplete.json': '186f593f8f2be7e709c5878f57d23f401c51e326ffcadcd62f9c5c08c8e34f3b',
        'data_en/data_special_irrelevant.json': '20bb62a9c48b1daf852870096f5d70d53a09a07b8f90a7c09815c6d934e8f41e',
        'data_en/possible_answer/data_agent_multi_step.json': '5081e9b5be93d8f9a52b91ee013250f1ae64a10d3edbe2d1225bb0beb99b160e',
        'data_en/possible_answer/data_agent_multi_turn.json': 'ad077af54920d614438c28b3c7483d556b1a732d0dd0973c867e497c7c0a828b',
        'data_en/possible_answer/data_normal_atom_bool.json': '16c5c8d009d37a0dd5e398838c62857ad2ebae1eb0c0ee1a52eed39a654df86e',
        'data_en/possible_answer/data_normal_atom_enum.json': '01fe289a43c49b4118f063c9acc7422bc3193771fed2c1f2fbee009e44cc21ed',
        'data_en/possible_answer/data_normal_atom_list.json': 'e71b36d87d6f3b5129026e511acb12d560d4f6ed18009fa38b82980e8a0c5f51',
        'data_en/possible_answer/data_normal_atom_number.json': '7b4b580781f54d7c2a308bf125753a852895b7069b75c0397d2f2131398bf5ea',
        'data_en/possible_answer/data_normal_atom_object_deep.json': 'bf681a1cd84fb286562f3ba57ce9d28946a7cdcf8661b2aad125d69d4beecab7',
        'data_en/possible_answer/data_normal_atom_object_short.json': 'cbe2efb23ae18454f28cdb3e5aaf223e30c2249b73d0722956f588124970e184',
        'data_en/possible_answer/data_normal_multi_turn_user_adjust.json': 'a570117cde521c5d1c16adc2d461b8845c969a3334192bd357dec13cf6657889',
        'data_en/possible_answer/data_normal_multi_turn_user_switch.json': 'ca0c10778a899fecd3b9767dae7d188d9924a0dbb191e2e6bc0b5808b8baa37e',
        'data_en/possible_answer/data_normal_preference.json': 'ed9da0b58446812e8be562fb0594989bd759c249c1cdcd722a9dee5e89ee6644',
        'data_en/possible_answer/data_normal_similar_api.json': '0976f8fd3f11b9d5ba3783dc746158aeea3fdb1b34a46b07f3c4c731375a8543',
        'data_en/possible_answer/data_normal_single_turn_parallel_function.json': 'fac555edad6f61927093504f10bdaef3cf54fbd587affcf3ce52b9f4ec0d3aa0',
        'data_en/possible_answer/data_normal_single_turn_single_function.json': 'e541ad06ecaf49310105209222b9788711cc15d684174276f56224e584b8589d',
        'data_en/possible_answer/data_special_error_param.json': '5e4c8b8ca768d65372fac1e54c16ef90bf6c8869b8163a00a4afcc47867249b8',
        'data_en/possible_answer/data_special_incomplete.json': '2995a33b6c539bc29fe38a326a58d7989c6cf1b1bdaa22ff76c8d318b92f5f6d',
        'data_en/possible_answer/data_special_irrelevant.json': 'cd3f1d66e554869e8870677acc07df78c6ebf8bbba6e600cbb825072181566b8',
    },
    sizes={
        'LICENSE': 1140,
        'data_en/data_agent_multi_step.json': 102546,
        'data_en/data_agent_multi_turn.json': 149522,
        'data_en/data_normal_atom_bool.json': 300243,
        'data_en/data_normal_atom_enum.json': 315211,
        'data_en/data_normal_atom_list.json': 307549,
        'data_en/data_normal_atom_number.json': 305558,
        'data_en/data_normal_atom_object_deep.json': 235340,
        'data_en/data_normal_atom_object_short.json': 187041,
        'data_en/data_normal_multi_turn_user_adjust.json': 403725,
        'data_en/data_normal_multi_turn_user_switch.json': 616616,
        'data_en/data_normal_preference.json': 360015,
        'data_en/data_normal_similar_api.json': 105610,
        'data_en/data_normal_single_turn_parallel_function.json': 364550,
        'data_en/data_normal_single_turn_single_function.json': 377304,
        'data_en/data_special_error_param.json': 99795,
        'data_en/data_special_incomplete.json': 183613,
        'data_en/data_special_irrelevant.json': 175451,
        'data_en/possible_answer/data_agent_multi_step.json': 43358,
        'data_en/possible_answer/data_agent_multi_turn.json': 59156,
        'data_en/possible_answer/data_normal_atom_bool.json': 7810,
        'data_en/possible_answer/data_normal_atom_enum.json': 7553,
        'data_en/possible_answer/data_normal_atom_list.json': 8036,
        'data_en/possible_answer/data_normal_atom_number.json': 6849,
        'data_en/possible_answer/data_normal_atom_object_deep.json': 18865,
        'data_en/possible_answer/data_normal_atom_object_short.json': 13777,
        'data_en/possible_answer/data_normal_multi_turn_user_adjust.json': 31810,
        'data_en/possible_answer/data_normal_multi_turn_user_switch.json': 27345,
        'data_en/possible_answer/data_normal_preference.json': 10053,
        'data_en/possible_answer/data_normal_similar_api.json': 9993,
        'data_en/possible_answer/data_normal_single_turn_parallel_function.json': 59435,
        'data_en/possible_answer/data_normal_single_turn_single_function.json': 31354,
        'data_en/possible_answer/data_special_error_param.json': 4032,
        'data_en/possible_answer/data_special_incomplete.json': 5996,
        'data_en/possible_answer/data_special_irrelevant.json': 5990,
    },
)

TAU_BENCH = Source(
    folder="tau_bench",
    repository="https://github.com/sierra-research/tau-bench",
    commit="59a200c6d575d595120f1cb70fea53cef0632f6b",
    license="MIT",
    url="https://codeload.github.com/sierra-research/tau-bench/tar.gz/{commit}",
    members=(("tau_bench/envs/airline/data/", "airline/data/"), ("tau_bench/envs/retail/data/", "retail/data/"),
             ("few_shot_data/", "few_shot_data/"), ("LICENSE", "LICENSE")),  # fmt: skip
    max_download_bytes=128 << 20,  # the repository at the pinned commit: its files add up to 14 MB and more
    max_unpacked_bytes=512 << 20,
    files={
        'LICENSE': '243d23d45b80122b5ac575586ccef352fdc9c45e6d7d2605449aca8a17478b42',
        'airline/data/flights.json': '444d7565c68434a3e3fb72efd717f9f9cd5c56dce227f6f56e078f1cb0ed233a',
        'airline/data/reservations.json': '1cf0bbc58ad984be9de7c24dba6dd27393f94cdbd482d8524f6a54db1f561a8c',
        'airline/data/users.json': 'bd264e2a31e0fa35cdfef8987e70a0dd3776828b582fe90e7a44823a12eb4cea',
        'few_shot_data/MockAirlineDomainEnv-few_shot.jsonl': '7b14cd22355cd8245662e6d2b54e5dcad7e7e7e14f2e2e009a5649f915d9ac11',
        'few_shot_data/MockRetailDomainEnv-few_shot.jsonl': '091066a735d3d2605441764e0a2c6dcc93fb6595b400ff5e354416e6c8ba4a3a',
        'retail/data/orders.json': '2598a12586d28f2d6bd16bc86f4c800029b6af18e0abb5c475ef5c869c11ced1',
        'retail/data/products.json': 'a9eabcc1a9742c5f5288c2779acce52b9308423383ed24706bbaf0889f762a0f',
        'retail/data/users.json': '6f4fd104cc5e80b92166c4035315c31532c6cea52a90dcdf18425ee7f87c2b82',
    },
    sizes={
        'LICENSE': 1063,
        'airline/data/flights.json': 2114218,
        'airline/data/reservations.json': 2325594,
        'airline/data/users.json': 595947,
        'few_shot_data/MockAirlineDomainEnv-few_shot.jsonl': 129793,
        'few_shot_data/MockRetailDomainEnv-few_shot.jsonl': 632679,
        'retail/data/orders.json': 1810945,
        'retail/data/products.json': 172258,
        'retail/data/users.json': 322932,
    },
)

TAU_BENCH_TASKS = Source(  # the official task lists (Python files of literal data, read with an AST walk, never run)
    folder="tau_bench_tasks",
    repository=TAU_BENCH.repository,
    commit=TAU_BENCH.commit,
    license="MIT",
    url=TAU_BENCH.url,
    max_download_bytes=TAU_BENCH.max_download_bytes,  # the same archive
    max_unpacked_bytes=TAU_BENCH.max_unpacked_bytes,
    members=(("tau_bench/envs/retail/tasks_test.py", "retail/tasks_test.py"),
             ("tau_bench/envs/retail/tasks_train.py", "retail/tasks_train.py"),
             ("tau_bench/envs/retail/tasks_dev.py", "retail/tasks_dev.py"),
             ("tau_bench/envs/airline/tasks_test.py", "airline/tasks_test.py"), ("LICENSE", "LICENSE")),  # fmt: skip
    files={
        'LICENSE': '243d23d45b80122b5ac575586ccef352fdc9c45e6d7d2605449aca8a17478b42',
        'airline/tasks_test.py': '14cdb6b4fe810faac9a0cc8395d3c7b32c883a979d1cde8c8003ae25a93d2ff3',
        'retail/tasks_dev.py': '87dfe578d0271e7b0b5dfb40621a5c0dcc0e8452a75b8f3f8d1dcf0abac4ff14',
        'retail/tasks_test.py': '6f09468923c6cfb6162e94fe659264d6aee70816c18d51278fb4a581db7765a4',
        'retail/tasks_train.py': '30880ce4e8d524dd0fdd18c1d3a5713551fc8638e82673de3e0fd1ab70046c6f',
    },
    sizes={
        'LICENSE': 1063,
        'airline/tasks_test.py': 67250,
        'retail/tasks_dev.py': 19326,
        'retail/tasks_test.py': 169476,
        'retail/tasks_train.py': 471974,
    },
)

SOURCES: dict[str, Source] = {"bfcl": BFCL, "bfcl_v3": BFCL_V3, "acebench": ACEBENCH, "tau_bench": TAU_BENCH, "tau_bench_tasks": TAU_BENCH_TASKS}


def source_for(folder: str) -> str:
    """The `fetch` source that writes `folder` under the data root (the folder's own name if none does)."""
    return next((name for name, source in SOURCES.items() if source.folder == folder), folder)
