from kernel_gym.runner.serve import main

if __name__ == "__main__":
    main()
