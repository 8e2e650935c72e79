"""NeMo Gym's entrypoint for the kernel_gym resources server (its launcher runs this file in the server's folder)."""

from kernel_gym.integrations.nemo_gym import KernelGymResourcesServer

if __name__ == "__main__":
    KernelGymResourcesServer.run_webserver()
