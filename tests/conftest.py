"""pytest setup: --arch selects which guest arches the guest tests run on
(default: every arch that exists); `guest` is a booted guest, reaped after
the test whatever happens."""

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench import arches  # noqa: E402
from bench.guest import build  # noqa: E402
from bench.guest.qemu import Guest  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--arch", default="all",
                     help="comma list of guest arches to test, or all")


def pytest_generate_tests(metafunc):
    if "arch" in metafunc.fixturenames:
        value = metafunc.config.getoption("arch")
        names = arches.available() if value == "all" else value.split(",")
        metafunc.parametrize("arch", names)


@pytest.fixture(scope="session")
def built():
    done = set()

    def ensure(name):
        if name not in done:
            build.ensure_image(arches.get(name))
            done.add(name)
    return ensure


@pytest.fixture
def guest(arch, built, request):
    built(arch)
    with Guest(arch, label=request.node.name[:40]) as g:
        yield g
