"""Inputs for tiny HF Trainer runs built from configs (nothing downloaded)."""

from __future__ import annotations


def random_tokens(n: int = 32, length: int = 16, seed: int = 0):
    """A torch Dataset of ``n`` fixed random token sequences, labels = inputs (a model can
    memorise them)."""
    import torch

    class RandomTokens(torch.utils.data.Dataset):
        def __init__(self) -> None:
            self.ids = torch.randint(0, 64, (n, length), generator=torch.Generator().manual_seed(seed))

        def __len__(self) -> int:
            return len(self.ids)

        def __getitem__(self, i):
            return {"input_ids": self.ids[i], "labels": self.ids[i]}

    return RandomTokens()
