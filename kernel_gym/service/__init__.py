"""Evaluation over HTTP: `app.create_app` (the server behind `kernel-gym serve`) and `client.ServiceEvaluator`.
Both import FastAPI/httpx lazily (`pip install 'kernel-gym[serve]'`)."""
