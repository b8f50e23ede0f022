import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """2 shared cores: keep torch from oversubscribing them."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
