# jaxscope images. The default target (`jaxscope`) serves the web tier; the `torch-workers`
# target adds the PyTorch/XLA track's venv (torch 2.9.0 + torch_xla 2.9.0 and torchax beside
# them, ~7 GB, design 0025/0042) for the sandboxed worker pool, which runs both kinds of worker.
# docker-compose.yml starts them as two services; the workers' service has no network.

FROM node:20-bookworm-slim AS frontend
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend ./frontend
COPY exhibits ./exhibits
# The replay page names the jaxscope version and the jax pins from it (frontend/src/reproduce.ts).
COPY pyproject.toml ./
RUN npm run build

FROM python:3.11-slim-bookworm AS jaxscope
ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
# bubblewrap: every sandbox worker runs in its own namespaces (docs/design/0001-sandbox.md).
RUN apt-get update -q && apt-get install -y -q --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml constraints.txt README.md ./
COPY backend ./backend
COPY exhibits ./exhibits
RUN pip install -c constraints.txt . && useradd --uid 10001 --create-home jaxscope
COPY --from=frontend /src/frontend/dist ./frontend/dist
ENV JAXSCOPE_FRONTEND_DIST=/app/frontend/dist
USER 10001:10001
EXPOSE 8000
CMD ["jaxscope", "serve", "--host", "0.0.0.0", "--port", "8000"]

# The worker pool's image: the same app, plus the torch venv its torch workers run
# (`JAXSCOPE_TORCH_PYTHON`; torchax in torchax-site beside it, found from that venv). The pip
# lines are the Makefile's torch recipe's (backend/tests/test_hosted_image.py holds them so);
# a torch worker imports jaxscope and exhibits from the site-packages above by name only, not
# that folder's other packages (design 0047).
FROM jaxscope AS torch-workers
USER root
COPY requirements-torch.txt requirements-torchax.txt ./
RUN python -m venv /opt/venv-torch \
    && /opt/venv-torch/bin/pip install --no-deps -r requirements-torch.txt \
    && /opt/venv-torch/bin/pip install --no-deps --upgrade --target /opt/venv-torch/torchax-site \
       -r requirements-torchax.txt \
    && PJRT_DEVICE=CPU /opt/venv-torch/bin/python -c "import torch, torch_xla, pydantic, ml_dtypes"
ENV JAXSCOPE_TORCH_PYTHON=/opt/venv-torch/bin/python
USER 10001:10001
CMD ["jaxscope", "pool", "--socket", "/run/jaxscope/pool.sock", "--workers", "4"]
