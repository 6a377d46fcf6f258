"""How the project's processes are started and stopped, shared by the development stack
(`devstack`), the measurement tools and the production autoscaler, which must not import
the development stack: the command lines (`catalog`) and process groups (`groups`)."""
