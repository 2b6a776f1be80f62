"""Lightning's `WandbLogger` without the deprecated `anonymous` init argument.

Lightning 2.6 always passes ``anonymous=None`` to ``wandb.init``; wandb >= 0.22 warns on every run
that the setting has no effect. Dropping the key removes the cause; everything else is Lightning's.
"""

from __future__ import annotations

from typing import Any

from lightning.pytorch.loggers import WandbLogger as LightningWandbLogger


class WandbLogger(LightningWandbLogger):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self._wandb_init.get("anonymous") is None:
            self._wandb_init.pop("anonymous", None)
