"""mlx-lm 0.32.2 on mlx 0.32.4's Linux CPU build as a :class:`specdec.protocols.Decoder` (issue 39): a worker process
running mlx-lm (:mod:`.mlx_worker`, behind JSON lines: :mod:`.mlx_process`), the Python decoder and its verification
rule (:mod:`.mlx_decoder`), the sampling map (:mod:`.mlx_settings`), the model folder mlx-lm loads (:mod:`.mlx_model`)
and mlx-lm's own law of a token given its true prefix (:mod:`.mlx_oracle`).  Installed in ``.venv-mlx``
(``make .venv-mlx/.installed``)."""

from .mlx_decoder import SPECULATION, SUPPORTED_MLX, SUPPORTED_MLX_LM, MlxDecoder, check_versions
from .mlx_model import mlx_config, mlx_model_dir
from .mlx_process import MlxWorker, WorkerError
from .mlx_settings import CONTEXT_SIZE, request_settings

__all__ = ["CONTEXT_SIZE", "SPECULATION", "SUPPORTED_MLX", "SUPPORTED_MLX_LM", "MlxDecoder", "MlxWorker", "WorkerError",
           "check_versions", "mlx_config", "mlx_model_dir", "request_settings"]
