# jaxscope image: the web tier and the sandboxed worker pool run from this one image
# (docker-compose.yml starts them as two services; the workers' service has no network).

FROM node:20-bookworm-slim AS frontend
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY frontend ./frontend
COPY exhibits ./exhibits
RUN npm run build

FROM python:3.11-slim-bookworm
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
